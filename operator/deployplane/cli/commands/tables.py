"""Plain-text tables as kubectl prints them: columns of whole tokens, nothing folded.

A value is never split or cut: a UUID folded over five lines or a name cut mid-word
cannot be copied. So a table that does not fit the terminal loses whole columns (the
least useful first, by `drop` rank), never characters; what is left out is always in
`-o wide`, which drops nothing. Lines carry no trailing spaces and the header is bold
only on a terminal without `NO_COLOR` (https://no-color.org).

Rendering is a pure function of the rows and the width (`render`), so the golden
tests compare exact text at 60, 80 and 200 columns.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TextIO

from rich.cells import cell_len

__all__ = [
    "GAP",
    "Col",
    "Rendered",
    "human_age",
    "now",
    "render",
    "terminal_width",
    "use_color",
]

GAP = 2  # spaces between columns, as kubectl's tabwriter padding


@dataclass(frozen=True)
class Col:
    """A column: `drop` ranks what goes first when narrow (0: kept; the table then runs
    past the width rather than split a value); `wide` columns show with `-o wide` only."""

    title: str
    drop: int = 0
    wide: bool = False


@dataclass(frozen=True)
class Rendered:
    lines: list[str]
    hidden: list[str]
    """Titles of the columns left out to fit the width (not the `-o wide` ones)."""


def _pad(text: str, width: int) -> str:
    return text + " " * (width - cell_len(text))


def render(
    columns: Sequence[Col],
    rows: Sequence[Sequence[str]],
    width: int | None,
    *,
    wide: bool = False,
    headers: bool = True,
) -> Rendered:
    """The table's lines at `width` (None: unlimited), and the columns it left out."""
    shown = [i for i, col in enumerate(columns) if wide or not col.wide]
    widths = {
        i: max([cell_len(columns[i].title) if headers else 0, *(cell_len(r[i]) for r in rows)])
        for i in shown
    }
    hidden: list[str] = []
    if width is not None and not wide:
        droppable = sorted((i for i in shown if columns[i].drop), key=lambda i: columns[i].drop)
        while sum(widths[i] for i in shown) + GAP * (len(shown) - 1) > width and droppable:
            gone = droppable.pop(0)
            shown.remove(gone)
            hidden.append(columns[gone].title)
    table = ([[c.title for c in columns]] if headers else []) + [list(r) for r in rows]
    lines = ["".join(_pad(row[i], widths[i] + GAP) for i in shown).rstrip() for row in table]
    return Rendered(lines, hidden)


def terminal_width() -> int | None:
    """$COLUMNS, else the terminal's width; None (unlimited) when piped without it, so
    a script sees every column."""
    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit() and int(columns) > 0:
        return int(columns)
    if sys.stdout.isatty():
        return shutil.get_terminal_size().columns
    return None


def use_color(stream: TextIO) -> bool:
    """Bold and colours only for a person at a terminal that did not opt out."""
    return stream.isatty() and not os.environ.get("NO_COLOR")


def now() -> datetime:
    """The current time (tests replace it to make AGE reproducible)."""
    return datetime.now(UTC)


def human_age(then: datetime, at: datetime | None = None) -> str:
    """kubectl's AGE (apimachinery duration.HumanDuration): 45s, 3m20s, 5h, 12d, 2y3d."""
    seconds = int(((at or now()) - then).total_seconds())
    if seconds < -1:
        return "<invalid>"
    if seconds < 0:
        return "0s"
    if seconds < 120:
        return f"{seconds}s"
    minutes = seconds // 60
    if minutes < 10:
        rest = seconds % 60
        return f"{minutes}m{rest}s" if rest else f"{minutes}m"
    if minutes < 180:
        return f"{minutes}m"
    hours = minutes // 60
    if hours < 8:
        rest = minutes % 60
        return f"{hours}h{rest}m" if rest else f"{hours}h"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        rest = hours % 24
        return f"{hours // 24}d{rest}h" if rest else f"{hours // 24}d"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        days = hours // 24 - 365 * (hours // (24 * 365))
        return f"{hours // (24 * 365)}y{days}d" if days else f"{hours // (24 * 365)}y"
    return f"{hours // (24 * 365)}y"
