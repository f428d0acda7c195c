"""`deployplane` and `python -m deployplane.cli`: the command line's entry point.

The long-running commands (`operator run`, `listener run`, `controlplane serve`) start
with their own command group only, not the whole command line: the tables, `trace`,
the dev cluster and the demo are not loaded into a process that runs for weeks. That
is 41 MB of the operator's resident memory (measured: `import deployplane.cli.root`
after the operator's own modules), about a quarter of it at 1,000 resources. Their
`--help`, and every other command, go through the whole command line
(`deployplane.cli.root`), so help texts and errors read the same either way.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Sequence
from typing import Final

import typer

SERVER_GROUPS: Final = {
    "operator": "deployplane.controller.cli",
    "listener": "deployplane.dataplane.cli",
    "controlplane": "deployplane.controlplane.cli",
}
"""Command groups that run a server, and the module holding each one's Typer app."""


def server_group(args: Sequence[str]) -> str | None:
    """The module of the server command `args` runs, loaded alone; None: the whole CLI."""
    if len(args) < 2 or args[0] not in SERVER_GROUPS or "--help" in args:
        return None
    return SERVER_GROUPS[args[0]]


def main(argv: Sequence[str] | None = None) -> None:
    args = list(sys.argv[1:] if argv is None else argv)
    module = server_group(args)
    if module is not None:
        # As a group, as `add_typer` makes it: Typer would run a one-command app as that
        # command ("run" then an unexpected argument).
        group = typer.main.get_group(importlib.import_module(module).app)
        group.main(args[1:], prog_name=f"deployplane {args[0]}")
        return
    from deployplane.cli.root import app

    app(args, prog_name="deployplane")

