"""A plan for people (a table), for programs (JSON) and for a pull request (markdown):
pure functions of the rows, so the golden tests compare exact text."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Final

from deployplane.cli.commands.plan.rows import Row, summary
from deployplane.cli.commands.tables import Col
from deployplane.reconcile.decision import Action

__all__ = ["COLUMNS", "as_json", "as_markdown", "explained", "table_rows"]

COLUMNS: Final = (
    Col("RESOURCE"),
    Col("NAMESPACE", drop=1),
    Col("ACTION"),
    Col("WHY", drop=3),
    Col("FIELDS", drop=2),
)


def _resource(row: Row) -> str:
    return f"{row.kind.lower()}/{row.name}"


def _sentence(reason: str) -> bool:
    """A reason that is a sentence (a refusal, a deletion's effect, what a change waits
    for) rather than a word (image, source, config): it follows the table."""
    return " " in reason


def _why(row: Row) -> str:
    words = [r for r in row.reasons if not _sentence(r)]
    below = "see below" if any(_sentence(r) for r in row.reasons) else ""
    return ", ".join([*words, below] if below else words) or "-"


def table_rows(rows: Sequence[Row]) -> list[list[str]]:
    return [
        [_resource(r), r.namespace, str(r.action), _why(r), ", ".join(r.fields) or "-"]
        for r in rows
    ]


def explained(rows: Sequence[Row]) -> list[str]:
    """The lines under the table: each refusal field by field, and every reason that is
    a sentence, one line each."""
    lines: list[str] = []
    for row in rows:
        for i, reason in enumerate(row.reasons):
            if not _sentence(reason):
                continue
            field = row.fields[i] if row.failed and i < len(row.fields) else ""
            where = f"{field}: " if field else ""
            lines.append(f"{_resource(row)} {row.action}: {where}{reason}")
    return lines


def as_json(rows: Sequence[Row]) -> str:
    return json.dumps({"items": [row.as_json() for row in rows]}, indent=2)


def _cell(text: str) -> str:
    """Text safe in a markdown table cell: one line, no column break, no HTML."""
    one_line = " ".join(text.split())
    return one_line.replace("&", "&amp;").replace("<", "&lt;").replace("|", "\\|")


def _code(names: Sequence[str]) -> str:
    return ", ".join(f"`{_cell(n)}`" for n in names if n)


def _md_why(row: Row) -> str:
    if not row.failed:
        return _cell(", ".join(row.reasons))
    pairs = []
    for i, reason in enumerate(row.reasons):
        field = row.fields[i] if i < len(row.fields) else ""
        pairs.append(f"`{_cell(field)}`: {_cell(reason)}" if field else _cell(reason))
    return "<br>".join(pairs)


def _md_table(rows: Sequence[Row]) -> list[str]:
    lines = ["| resource | namespace | action | why | fields |", "| --- | --- | --- | --- | --- |"]
    for row in rows:
        action = f"**{row.action}**" if row.changes or row.failed else str(row.action)
        fields = "" if row.failed else _code(row.fields)
        cells = [f"{row.kind}/{_cell(row.name)}", _cell(row.namespace), action]
        lines.append("| " + " | ".join([*cells, _md_why(row), fields]) + " |")
    return lines


def as_markdown(rows: Sequence[Row], title: str = "deployplane plan") -> str:
    """A pull-request comment: the summary, the rows that change or fail, and the
    unchanged ones folded away."""
    lines = [f"#### {title}", "", f"**{summary(rows)}**"]
    shown = [row for row in rows if row.action != Action.NONE]
    unchanged = [row for row in rows if row.action == Action.NONE]
    if shown:
        lines += ["", *_md_table(shown)]
    if unchanged:
        lines += ["", f"<details><summary>{len(unchanged)} unchanged</summary>", ""]
        lines += [*_md_table(unchanged), "", "</details>"]
    return "\n".join(lines)
