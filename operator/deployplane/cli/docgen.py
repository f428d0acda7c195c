"""docs/cli.md's command reference, generated from the real `--help` of each command.

`python -m deployplane.cli.docgen` rewrites the part of docs/cli.md between the
two markers below; `--check` exits 1 when the file differs from the code (the unit
test tests/unit/cli/test_cli_docs.py fails the same way), so the reference cannot drift.
The help is exactly what a terminal of 80 columns shows (`deployplane.cli.helptext`).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click

from deployplane.cli.helptext import HelpContext

__all__ = ["BEGIN", "END", "reference", "updated"]

BEGIN = "<!-- BEGIN GENERATED: python -m deployplane.cli.docgen -->"
END = "<!-- END GENERATED -->"
WIDTH = 80

# The groups a user of the API and the emulator meets, and the listener agent (whose
# settings are options); the cluster, operator and demo commands are documented with
# their components.
DOCUMENTED = (
    "apply",
    "deployments",
    "revisions",
    "listeners",
    "repos",
    "providers",
    "config",
    "version",
    "trace",
    "plan",
    "approve",
    "export",
    "completion",
    "controlplane",
    "listener",
)


def _walk(command: Any, ctx: click.Context, path: str) -> Iterator[tuple[str, str]]:
    yield path, command.get_help(ctx)
    names = command.list_commands(ctx) if isinstance(command, click.Group) else []
    for name in sorted(names):
        sub = command.get_command(ctx, name)
        sub_ctx = HelpContext(sub, info_name=name, parent=ctx, terminal_width=WIDTH)
        yield from _walk(sub, sub_ctx, f"{path} {name}")


def reference() -> str:
    """The generated section (without the markers)."""
    from deployplane.cli.root import root

    root_ctx = HelpContext(root, info_name="deployplane", terminal_width=WIDTH)
    parts = ["## Command reference (generated from `--help`)\n"]
    for name in DOCUMENTED:
        sub = root.get_command(root_ctx, name)
        assert sub is not None, name
        ctx = HelpContext(sub, info_name=name, parent=root_ctx, terminal_width=WIDTH)
        for path, text in _walk(sub, ctx, f"deployplane {name}"):
            parts.append(f"### `{path}`\n\n```\n{text.rstrip()}\n```\n")
    return "\n".join(parts)


def updated(document: str) -> str:
    """`document` with its generated section replaced by the current one."""
    head, begin, rest = document.partition(BEGIN)
    if not begin:
        raise ValueError(f"docs/cli.md has no {BEGIN!r} marker")
    _, end, tail = rest.partition(END)
    if not end:
        raise ValueError(f"docs/cli.md has no {END!r} marker")
    return f"{head}{BEGIN}\n\n{reference()}\n{END}{tail}"


def main() -> None:
    path = Path(__file__).resolve().parents[3] / "docs" / "cli.md"
    current = path.read_text(encoding="utf-8")
    fresh = updated(current)
    if "--check" in sys.argv[1:]:
        if fresh != current:
            print(
                f"{path} differs from the commands' --help: run python -m deployplane.cli.docgen",
                file=sys.stderr,
            )
            raise SystemExit(1)
        return
    path.write_text(fresh, encoding="utf-8")


if __name__ == "__main__":
    main()
