"""`deployplane completion bash|zsh|fish|powershell`: the script that makes TAB complete
`deployplane` commands, options and resource names, as `kubectl completion` and `gh
completion` print theirs.

The scripts are typer's: they call `deployplane` with `_DEPLOYPLANE_COMPLETE` set and the
command line so far, and offer what it answers (`deployplane.cli.root.run`, which never
lets an error reach the terminal). Resource names come from the control plane
(`completers`).
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

import typer

__all__ = ["Shell", "app", "completion"]

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
    # typer's own printer of its scripts (as its --show-completion): prints, exits 0.
    typer.completion.show_callback(ctx, ctx.command.params[0], shell.value)
