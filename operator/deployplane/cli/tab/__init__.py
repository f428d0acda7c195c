"""A TAB answered without loading the command line.

The scripts of `deployplane completion SHELL` run `deployplane` with
`_DEPLOYPLANE_COMPLETE` set for every TAB. Typer and click would answer by building the
commands the words lead to (importing typer, click and the command modules: 0.15 to
0.2 CPU-seconds); this package answers from a tree generated from those commands
(`tree`, by `python -m deployplane.cli.treegen`) the way click would (`offer`), in the
formats of typer's scripts (`shells`): the interpreter and a few small modules. Resource
names are asked of the control plane (`names`), as the commands' own completers do.

`answer` returns None (and prints nothing) where the answer must be click's: a request
it does not know, or a command the tree marks for click; `deployplane.cli.root.run`
answers those.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = ["COMPLETE_VAR", "answer"]

COMPLETE_VAR = "_DEPLOYPLANE_COMPLETE"
"""Set by the scripts of `deployplane completion SHELL`: the process answers a TAB."""


def answer(environ: Mapping[str, str]) -> tuple[str, int] | None:
    """What to print for the TAB `environ` asks about, and the exit code; None when
    click must answer it."""
    instruction, _, shell = environ.get(COMPLETE_VAR, "").partition("_")
    from deployplane.cli.tab import shells

    if instruction != "complete" or shell not in shells.SHELLS:
        return None
    try:
        from deployplane.cli.tab.offer import offer
        from deployplane.cli.tab.tree import TREE

        args, incomplete = shells.request(shell, environ)
        offered = offer(TREE, args, incomplete, environ)
    except Exception:  # click answers what this does not understand
        return None
    if offered is None:
        return None
    items, files = offered
    return shells.answer(shell, items, environ, files=files)
