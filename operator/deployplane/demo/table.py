"""What `deployplane demo up` shows while it waits: the example resources' rows (read
from the cluster) and the live table they make, fitted to the terminal (`fitted_table`:
whole columns dropped by rank, long ids folded)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from kubernetes import client
from rich.cells import cell_len
from rich.table import Table

from deployplane.kube.paths import GROUP, VERSION


@dataclass(frozen=True)
class FitColumn:
    """A table column. `drop` ranks what goes first when the terminal is narrow (0: never
    dropped); `fold` lets a long value (an id) continue on the next line instead."""

    title: str
    drop: int = 0
    fold: bool = False


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


# ------------------------------------------------------ the example resources

KINDS = (
    ("ControlPlaneConnection", "controlplaneconnections"),
    ("Listener", "listeners"),
    ("AgentDeployment", "agentdeployments"),
)


def rows(api: client.ApiClient, namespace: str) -> list[dict[str, Any]]:
    """One row per example resource of `namespace`: its conditions, revision, id and
    how long it took to be Ready (or has been waiting)."""
    custom = client.CustomObjectsApi(api)
    rows = []
    for kind, plural in KINDS:
        for obj in custom.list_namespaced_custom_object(GROUP, VERSION, namespace, plural)["items"]:
            status = obj.get("status") or {}
            conds = {c["type"]: c for c in status.get("conditions", [])}
            created = dt.datetime.fromisoformat(obj["metadata"]["creationTimestamp"])
            ready = conds.get("Ready", {})
            until = (
                dt.datetime.fromisoformat(ready["lastTransitionTime"])
                if ready.get("status") == "True"
                else dt.datetime.now(dt.UTC)
            )
            rows.append(
                {
                    "elapsed": f"{(until - created).total_seconds():.0f}s",
                    "kind": kind,
                    "name": obj["metadata"]["name"],
                    "ready": conds.get("Ready", {}).get("status", "-"),
                    "synced": conds.get("Synced", {}).get("status", "-"),
                    "revision": (status.get("revision") or {}).get("status", "-"),
                    "id": status.get("deploymentId")
                    or status.get("listenerId")
                    or status.get("url")
                    or "-",
                }
            )
    return rows


# Fits 80 columns with long names: kinds by their kubectl short names, then the id folds,
# then SYNCED and ELAPSED go; a name is never cut.
_SHORT_KIND = {"AgentDeployment": "agd", "Listener": "dpl", "ControlPlaneConnection": "dpconn"}
_COLUMNS = (
    ("kind", FitColumn("KIND")),
    ("name", FitColumn("NAME")),
    ("ready", FitColumn("READY")),
    ("synced", FitColumn("SYNCED", drop=2)),
    ("revision", FitColumn("REVISION")),
    ("elapsed", FitColumn("ELAPSED", drop=3)),
    ("id", FitColumn("ID", drop=1, fold=True)),
)


def table(rows: list[dict[str, Any]], namespace: str, elapsed: float, width: int) -> Table:
    """The live table `demo up` shows, fitted to `width` columns."""
    cells = [
        [
            _SHORT_KIND.get(str(row[key]), str(row[key])) if key == "kind" else str(row[key])
            for key, _ in _COLUMNS
        ]
        for row in rows
    ]
    styles = ["green" if row["ready"] == "True" else "yellow" for row in rows]
    fitted, _ = fitted_table(
        [column for _, column in _COLUMNS],
        cells,
        width,
        row_styles=styles,
        title=f"deployplane demo: namespace {namespace} ({elapsed:.0f}s)",
    )
    return fitted
