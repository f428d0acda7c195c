"""Rendering API models for people (rich tables) and for programs (JSON, YAML).

JSON and YAML are the API's own snake_case shape (`model_dump(mode="json")`), so the
output of `get -o yaml` can be edited and fed back to `create -f` / `update -f`.
Tables pick a few columns per kind for lists, and show every top-level field for one
resource (nested ones as indented YAML without the nulls).

Tables fit the terminal (80 columns is the test) without ever cutting a value with an
ellipsis: a name cut short is a name that cannot be copied. Columns that matter less are
dropped first (and named under the table), then ids fold onto a second line.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Annotated, Any

import typer
import yaml
from pydantic import BaseModel
from rich.cells import cell_len
from rich.console import Console
from rich.table import Table

from deployplane.api.models import Deployment, GitRepository, Listener, Revision

__all__ = [
    "FitColumn",
    "Output",
    "OutputOption",
    "fitted_table",
    "print_many",
    "print_one",
    "stdout_console",
]


class Output(StrEnum):
    """Output formats."""

    table = "table"
    json = "json"
    yaml = "yaml"


OutputOption = Annotated[
    Output, typer.Option("--output", "-o", help="Output format.", case_sensitive=False)
]


@dataclass(frozen=True)
class FitColumn:
    """A table column. `drop` ranks what goes first when the terminal is narrow (0: never
    dropped); `fold` lets a long value (an id) continue on the next line instead."""

    title: str
    drop: int = 0
    fold: bool = False


@dataclass(frozen=True)
class Column(FitColumn):
    get: Callable[[Any], object] = str


def _revision_ref(rev: Revision) -> object:
    cfg = rev.source_revision_config
    return cfg.image_uri or cfg.repo_ref or cfg.graph_config_path


_COLUMNS: dict[type[BaseModel], list[Column]] = {
    Deployment: [
        Column("NAME", get=lambda d: d.name),
        Column("STATUS", get=lambda d: d.status.value),
        Column("ID", fold=True, get=lambda d: d.id),
        Column("SOURCE", drop=3, get=lambda d: d.source.value),
        Column("LATEST REVISION", drop=2, fold=True, get=lambda d: d.latest_revision_id),
        Column("ACTIVE REVISION", drop=1, fold=True, get=lambda d: d.active_revision_id),
        Column("UPDATED", drop=4, get=lambda d: d.updated_at.isoformat(timespec="seconds")),
    ],
    Revision: [
        Column("ID", fold=True, get=lambda r: r.id),
        Column("STATUS", get=lambda r: r.status.value),
        Column("SOURCE", drop=2, get=lambda r: r.source.value),
        Column("REF / IMAGE", fold=True, get=_revision_ref),
        Column("COMMIT", drop=1, fold=True, get=lambda r: r.source_revision_config.repo_commit_sha),
        Column("CREATED", drop=3, get=lambda r: r.created_at.isoformat(timespec="seconds")),
    ],
    Listener: [
        Column("ID", fold=True, get=lambda x: x.id),
        Column("COMPUTE TYPE", drop=2, get=lambda x: x.compute_type.value),
        Column("COMPUTE ID", get=lambda x: x.compute_id),
        Column(
            "NAMESPACES",
            drop=1,
            fold=True,
            get=lambda x: (
                ",".join(x.compute_config.k8s_namespaces or []) if x.compute_config else None
            ),
        ),
        Column("VERSION", drop=3, get=lambda x: x.version),
        Column("UPDATED", drop=4, get=lambda x: x.updated_at.isoformat(timespec="seconds")),
    ],
    GitRepository: [
        Column("OWNER", get=lambda g: g.owner),
        Column("NAME", get=lambda g: g.name),
        Column("DEFAULT BRANCH", drop=2, get=lambda g: g.default_branch),
        Column("URL", drop=3, fold=True, get=lambda g: g.url),
        Column("ID", drop=4, get=lambda g: g.id),
        Column("INTEGRATION", drop=1, fold=True, get=lambda g: g.host_integration_id),
    ],
}

_GAP = 2  # spaces between columns (box=None, no edge padding)
_MIN_FOLD = 8  # a folded column keeps at least this many characters a line


def _text_width(text: str) -> int:
    """Terminal cells of the widest line (a wide character takes two)."""
    return max(map(cell_len, text.splitlines() or [""]))


def _natural_widths(columns: Sequence[FitColumn], rows: Sequence[Sequence[str]]) -> list[int]:
    return [
        max([cell_len(col.title), *(_text_width(row[i]) for row in rows)])
        for i, col in enumerate(columns)
    ]


def _kept_columns(
    columns: Sequence[FitColumn], widths: list[int], width: int
) -> tuple[list[int], list[str]]:
    """Indexes of the columns to show, and the titles dropped to fit `width`."""
    keep = list(range(len(columns)))
    dropped: list[str] = []
    droppable = sorted((i for i, c in enumerate(columns) if c.drop), key=lambda i: columns[i].drop)
    while sum(widths[i] for i in keep) + _GAP * (len(keep) - 1) > width and droppable:
        gone = droppable.pop(0)
        keep.remove(gone)
        dropped.append(columns[gone].title)
    return keep, dropped


def fitted_table(
    columns: Sequence[FitColumn],
    rows: Sequence[Sequence[str]],
    width: int,
    *,
    row_styles: Sequence[str | None] = (),
    **table: Any,
) -> tuple[Table, list[str]]:
    """A table of `rows` no wider than `width` (when the unfoldable values allow it),
    and the titles of the columns dropped to get there."""
    widths = _natural_widths(columns, rows)
    keep, dropped = _kept_columns(columns, widths, width)
    excess = sum(widths[i] for i in keep) + _GAP * (len(keep) - 1) - width
    folded = [i for i in keep if columns[i].fold]
    # Share the excess among the foldable columns, widest first.
    for i in sorted(folded, key=lambda i: -widths[i]):
        if excess <= 0:
            break
        cut = min(excess, max(0, widths[i] - _MIN_FOLD))
        widths[i] -= cut
        excess -= cut
    result = Table(show_header=True, header_style="bold", box=None, pad_edge=False, **table)
    for i in keep:
        result.add_column(
            columns[i].title,
            no_wrap=not columns[i].fold,
            overflow="fold",
            min_width=widths[i],
            max_width=widths[i],
        )
    for n, row in enumerate(rows):
        style = row_styles[n] if n < len(row_styles) else None
        result.add_row(*(row[i] for i in keep), style=style)
    return result, dropped


def stdout_console() -> Console:
    """A console on the current stdout: the terminal's width (or $COLUMNS), and wide
    when piped without $COLUMNS so a script sees every column on one line."""
    if sys.stdout.isatty() or os.environ.get("COLUMNS", "").isdigit():
        return Console(highlight=False)  # rich reads $COLUMNS, else asks the terminal
    return Console(width=250, highlight=False)


def _prune(value: Any) -> Any:
    """`value` without None anywhere inside (dict entries and list items)."""
    if isinstance(value, dict):
        return {k: _prune(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_prune(v) for v in value if v is not None]
    return value


def _cell(value: object) -> str:
    if value is None:
        return "-"
    if isinstance(value, dict | list):
        pruned = _prune(value)
        if not pruned:
            return "-"
        return yaml.safe_dump(pruned, sort_keys=False, allow_unicode=True).rstrip("\n")
    return str(value)


def _dump_text(data: Any, fmt: Output) -> str:
    if fmt is Output.json:
        return json.dumps(data, indent=2)
    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True).rstrip("\n")


def print_one(model: BaseModel, fmt: Output) -> None:
    """Print one resource."""
    data = model.model_dump(mode="json")
    if fmt is not Output.table:
        typer.echo(_dump_text(data, fmt))
        return
    table = Table(show_header=True, header_style="bold", box=None, pad_edge=False)
    table.add_column("FIELD", no_wrap=True)
    table.add_column("VALUE", overflow="fold")
    for key, value in data.items():
        table.add_row(key, _cell(value))
    stdout_console().print(table)


def print_many(models: Sequence[BaseModel], kind: type[BaseModel], fmt: Output) -> None:
    """Print a list of resources of one kind."""
    if fmt is not Output.table:
        typer.echo(_dump_text([m.model_dump(mode="json") for m in models], fmt))
        return
    console = stdout_console()
    columns = _COLUMNS[kind]
    rows = [[_cell(col.get(model)) for col in columns] for model in models]
    table, dropped = fitted_table(columns, rows, console.width)
    console.print(table)
    if dropped:
        console.print(f"(hidden at this width: {', '.join(dropped)}; -o yaml has all)")
