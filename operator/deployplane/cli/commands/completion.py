"""`deployplane completion bash|zsh|fish|powershell`: the script that makes TAB complete
`deployplane` commands, options and resource names, as `kubectl completion` and `gh
completion` print theirs.

The scripts (`deployplane/cli/tab/scripts/`) are cobra's: at each TAB they run
`deployplane __complete WORDS...` (`deployplane.cli.tab.complete`) and offer what it
answers, file names only where it allows them.
"""

from __future__ import annotations

from enum import StrEnum

import click

from deployplane.cli.helptext import Command
from deployplane.cli.params import EnumChoice, argument, option

__all__ = ["Shell", "completion", "script"]


class Shell(StrEnum):
    bash = "bash"
    zsh = "zsh"
    fish = "fish"
    powershell = "powershell"


_FILES = {
    Shell.bash: "deployplane.bash",
    Shell.zsh: "deployplane.zsh",
    Shell.fish: "deployplane.fish",
    Shell.powershell: "deployplane.ps1",
}
_REQUEST = " __complete "


def script(shell: Shell, descriptions: bool = True) -> str:
    """The completion script of `shell`; without `descriptions`, it asks for the values
    alone (`__completeNoDesc`)."""
    from importlib import resources

    text = resources.files("deployplane.cli.tab").joinpath("scripts", _FILES[shell]).read_text()
    if descriptions:
        return text
    # the one line that asks deployplane (the others name the protocol in comments)
    lines = text.splitlines(keepends=True)
    asking = [i for i, line in enumerate(lines) if _REQUEST in line and "#" not in line]
    if len(asking) != 1:
        raise RuntimeError(f"the {shell} script does not ask deployplane in one line")
    lines[asking[0]] = lines[asking[0]].replace(_REQUEST, " __completeNoDesc ")
    return "".join(lines)


@click.command("completion", cls=Command)
@argument(
    "shell",
    type=EnumChoice(Shell, case_sensitive=True),
    metavar="SHELL",
    help=("bash, zsh, fish or powershell."),
)
@option("--no-descriptions", is_flag=True, help="Offer the values without what they are.")
def completion(shell: Shell, no_descriptions: bool) -> None:
    """Print the completion script of a shell (bash, zsh, fish, powershell).

    TAB then completes commands, options and the names of deployments, listeners and
    revisions (asked of the control plane).

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
    click.echo(script(shell, descriptions=not no_descriptions), nl=False)
