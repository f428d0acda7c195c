"""How every command prints its help: click's plain format (no boxes, no `<bool>` for a
flag), at most 80 columns, lines broken at spaces only.

Click wraps with Python's `textwrap`, which also breaks a line after a hyphen: `config
get-contexts` or `--name-contains` cut in two. The formatter hands it every hyphen as a
non-breaking one (U+2011, which `textwrap` does not split at) and gives the text back
with plain hyphens.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final

import click
import typer

__all__ = ["HelpContext", "HelpFormatter", "plain_tree"]

_KEPT: Final = "\u2011"


def _kept(text: str) -> str:
    return text.replace("-", _KEPT)


class HelpFormatter(click.HelpFormatter):
    """Click's help formatter, breaking lines at spaces only."""

    def write_usage(self, prog: str, args: str = "", prefix: str | None = None) -> None:
        super().write_usage(_kept(prog), _kept(args), prefix)

    def write_text(self, text: str) -> None:
        super().write_text(_kept(text))

    def write_dl(
        self, rows: Iterable[tuple[str, str]], col_max: int = 30, col_spacing: int = 2
    ) -> None:
        super().write_dl([(_kept(a), _kept(b)) for a, b in rows], col_max, col_spacing)

    def getvalue(self) -> str:
        return super().getvalue().replace(_KEPT, "-")


class HelpContext(typer.Context):
    """The context of every command: its help through `HelpFormatter`."""

    formatter_class = HelpFormatter


def plain_tree(command: Any) -> None:
    """`command` and every command below it print their help with `HelpFormatter`."""
    command.context_class = HelpContext
    for sub in getattr(command, "commands", {}).values():
        plain_tree(sub)
