"""`deployplane completion bash|zsh|fish|powershell`: the script that makes TAB complete
`deployplane` commands, options and resource names, as `kubectl completion` and `gh
completion` print theirs.

The scripts are typer's: they call `deployplane` with `_DEPLOYPLANE_COMPLETE` set and the
command line so far, and offer what it answers (`deployplane.cli.root.run`, which never
lets an error reach the terminal). Resource names come from the control plane
(`completers`). bash's has one line more: typer's offers the current directory's files
whenever nothing else is offered (`complete -o default`), this one not where
`deployplane` says no file name fits (`deployplane.cli.tab.shells.NO_FILES`).
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

import typer
from typer._completion_shared import get_completion_script

from deployplane.cli.tab import COMPLETE_VAR
from deployplane.cli.tab.shells import NO_FILES

__all__ = ["Shell", "app", "bash_script", "completion"]

app = typer.Typer(rich_markup_mode=None, add_completion=False)


class Shell(StrEnum):
    bash = "bash"
    zsh = "zsh"
    fish = "fish"
    powershell = "powershell"


@app.command("completion")
def completion(
    ctx: typer.Context,
    shell: Annotated[Shell, typer.Argument(metavar="SHELL", help="bash, zsh, fish or powershell.")],
) -> None:
    """Print the completion script of SHELL: TAB then completes commands, options and
    the names of deployments, listeners and revisions (asked of the control plane).

    \b
    bash:  source <(deployplane completion bash)
           (every new shell: save it as
           ~/.local/share/bash-completion/completions/deployplane)
    zsh:   source <(deployplane completion zsh)   (after compinit)
    fish:  deployplane completion fish > \\
             ~/.config/fish/completions/deployplane.fish
    powershell:
           deployplane completion powershell | Out-String | Invoke-Expression
    """
    if shell is Shell.bash:
        typer.echo(bash_script(ctx.find_root().info_name or "deployplane"))
        return
    # typer's own printer of its scripts (as its --show-completion): prints, exits 0.
    typer.completion.show_callback(ctx, ctx.command.params[0], shell.value)


_BASH_END = "    return 0\n}"
_BASH_NO_FILES = f"""\
    # deployplane exits {NO_FILES} where no file name fits (a resource's name, a choice, a
    # command): then not even readline's file names (complete -o default).
    if [[ $? -eq {NO_FILES} ]]; then compopt +o default; fi
{_BASH_END}"""


def bash_script(prog_name: str) -> str:
    """typer's bash script, which offers the current directory's files whenever a
    completion finds nothing, told not to where `deployplane` says no file name fits."""
    script = get_completion_script(
        prog_name=prog_name, complete_var=COMPLETE_VAR, shell=Shell.bash.value
    )
    if script.count(_BASH_END) != 1:
        raise RuntimeError("typer's bash completion script no longer ends its function as known")
    return script.replace(_BASH_END, _BASH_NO_FILES)
