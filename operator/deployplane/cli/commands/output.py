"""Rendering API models for people (tables) and for programs (JSON, YAML, names).

JSON and YAML are the API's own snake_case shape (`model_dump(mode="json")`) without its
null fields, so the output of `get -o yaml` can be edited and fed back to `update -f` or
`apply -f` (a field left out is a field left as it is).
List tables have a few columns per kind (`-o wide` adds the rest) and are rendered by
`tables.render`, which never splits a value; `get` shows every top-level field (nested
ones as indented YAML without the nulls). `-o name` prints `kind/name`, which every
command taking an id accepts back (`deployplane.cli.commands.resolve`).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import click
from pydantic import BaseModel

from deployplane.cli.commands import tables
from deployplane.cli.commands.options import Output
from deployplane.cli.commands.tables import Col

if TYPE_CHECKING:
    from deployplane.api.models import Deployment, Listener, Revision

__all__ = [
    "api_fields",
    "dump_text",
    "print_many",
    "print_one",
    "print_table",
    "resource_name",
]


# --------------------------------------------------------------------- list tables


@dataclass(frozen=True)
class Column(Col):
    get: Callable[[Any, str | None], object] = lambda model, active: None


def _age(created: Any) -> str:
    return tables.human_age(created)


def _revision_ref(rev: Revision) -> object:
    cfg = rev.source_revision_config
    return cfg.image_uri or cfg.repo_ref or cfg.graph_config_path


def _deployment_ref(d: Deployment) -> object:
    cfg = d.source_revision_config
    return None if cfg is None else cfg.image_uri or cfg.repo_ref


def _namespaces(x: Listener) -> object:
    return ",".join(x.compute_config.k8s_namespaces or []) if x.compute_config else None


# Default columns fit 80 with names up to ~45 characters; `drop` says what goes first
# when they do not. `wide` columns (ids above all: 36 characters each) are -o wide only.
# Keyed by the model's class name: a listing imports its own kind's models only.
_COLUMNS: dict[str, list[Column]] = {
    "Deployment": [
        Column("NAME", get=lambda d, _: d.name),
        Column("STATUS", get=lambda d, _: d.status.value),
        Column("SOURCE", drop=1, get=lambda d, _: d.source),
        Column("AGE", drop=2, get=lambda d, _: _age(d.created_at)),
        Column("ID", wide=True, get=lambda d, _: d.id),
        Column("IMAGE / REF", wide=True, get=lambda d, _: _deployment_ref(d)),
        Column("LATEST REVISION", wide=True, get=lambda d, _: d.latest_revision_id),
        Column("ACTIVE REVISION", wide=True, get=lambda d, _: d.active_revision_id),
    ],
    "Revision": [
        Column("ACTIVE", get=lambda r, active: "*" if str(r.id) == active else ""),
        Column("ID", get=lambda r, _: r.id),
        Column("STATUS", get=lambda r, _: r.status.value),
        Column("AGE", drop=1, get=lambda r, _: _age(r.created_at)),
        Column("SOURCE", wide=True, get=lambda r, _: r.source),
        Column("IMAGE / REF", wide=True, get=lambda r, _: _revision_ref(r)),
        Column("COMMIT", wide=True, get=lambda r, _: r.source_revision_config.repo_commit_sha),
    ],
    "Listener": [
        Column("COMPUTE ID", get=lambda x, _: x.compute_id),
        Column("TYPE", drop=1, get=lambda x, _: x.compute_type.value),
        Column("NAMESPACES", drop=2, get=lambda x, _: _namespaces(x)),
        Column("AGE", drop=3, get=lambda x, _: _age(x.created_at)),
        Column("ID", wide=True, get=lambda x, _: x.id),
        Column("VERSION", wide=True, get=lambda x, _: x.version),
    ],
    "GitRepository": [
        Column("OWNER", get=lambda g, _: g.owner),
        Column("NAME", get=lambda g, _: g.name),
        Column("DEFAULT BRANCH", drop=1, get=lambda g, _: g.default_branch),
        Column("URL", wide=True, get=lambda g, _: g.url),
        Column("ID", wide=True, get=lambda g, _: g.id),
        Column("INTEGRATION", wide=True, get=lambda g, _: g.host_integration_id),
    ],
}


def resource_name(model: BaseModel) -> str:
    """`kind/name`, as `-o name` prints it and as commands taking an id accept it."""
    from deployplane.api.models import Deployment, GitRepository, Listener, OAuthProvider, Revision

    if isinstance(model, Deployment):
        return f"deployment/{model.name}"
    if isinstance(model, Listener):
        return f"listener/{model.compute_id}"
    if isinstance(model, Revision):
        return f"revision/{model.id}"
    if isinstance(model, GitRepository):
        return f"repository/{model.owner}/{model.name}"
    if isinstance(model, OAuthProvider):
        return f"provider/{model.provider_id}"
    raise TypeError(f"no name for {type(model).__name__}")


def _prune(value: Any) -> Any:
    """`value` without None anywhere inside (dict entries and list items)."""
    if isinstance(value, dict):
        return {k: _prune(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_prune(v) for v in value if v is not None]
    return value


def _cell(value: object) -> str:
    if value is None or value == "":
        return "-" if value is None else ""
    if isinstance(value, dict | list):
        pruned = _prune(value)
        if not pruned:
            return "-"
        import yaml

        return yaml.safe_dump(pruned, sort_keys=False, allow_unicode=True).rstrip("\n")
    return str(value)


def dump_text(data: Any, fmt: Output) -> str:
    """JSON (indented) or YAML (in the data's order) text of plain data."""
    if fmt is Output.json:
        return json.dumps(data, indent=2)
    import yaml

    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True).rstrip("\n")


def _echo_table(header: str | None, lines: list[str]) -> None:
    """Print a table; its header bold for a person at a terminal (click would strip
    the escape codes on its own when not, and keeps them when told `color`)."""
    color = tables.use_color(sys.stdout)
    if header is not None:
        lines = [f"\x1b[1m{header}\x1b[0m" if color else header, *lines]
    click.echo("\n".join(lines), color=color)


def api_fields(model: BaseModel) -> dict[str, Any]:
    """What `-o json|yaml` prints of a resource: the control plane's own fields (its
    snake_case names), the null ones left out, as kubectl leaves out empty fields."""
    return model.model_dump(mode="json", exclude_none=True)


def print_one(model: BaseModel, fmt: Output) -> None:
    """Print one resource: FIELD and VALUE lines, nested values as indented YAML."""
    if fmt is Output.name:
        click.echo(resource_name(model))
        return
    if fmt in (Output.json, Output.yaml):
        click.echo(dump_text(api_fields(model), fmt))
        return
    data = model.model_dump(mode="json")
    key_width = max(map(len, ["FIELD", *data])) + tables.GAP
    lines: list[str] = []
    for key, value in data.items():
        first, *rest = _cell(value).split("\n")
        lines.append((key.ljust(key_width) + first).rstrip())
        lines += [(" " * key_width + line).rstrip() for line in rest]
    _echo_table("FIELD".ljust(key_width) + "VALUE", lines)


def print_many(
    models: Sequence[BaseModel],
    kind: type[BaseModel],
    fmt: Output,
    *,
    headers: bool = True,
    active: str | None = None,
) -> None:
    """Print a list of resources of one kind. `active`: the id a row is marked for
    (the active revision)."""
    if fmt in (Output.json, Output.yaml):
        click.echo(dump_text([api_fields(m) for m in models], fmt))
        return
    if not models:  # as kubectl: a note for the person, nothing for the pipe
        click.echo("No resources found.", err=True)
        return
    if fmt is Output.name:
        click.echo("\n".join(resource_name(m) for m in models))
        return
    columns = _COLUMNS[kind.__name__]
    rows = [[_cell(col.get(model, active)) for col in columns] for model in models]
    print_table(columns, rows, fmt, headers=headers)


def print_table(
    columns: Sequence[Col], rows: Sequence[Sequence[str]], fmt: Output, *, headers: bool = True
) -> None:
    """Print rows at the terminal's width (`-o wide`: every column), and on stderr which
    columns were left out to fit."""
    width = tables.terminal_width()
    table = tables.render(columns, rows, width, wide=fmt is Output.wide, headers=headers)
    if headers:
        _echo_table(table.lines[0], table.lines[1:])
    else:
        _echo_table(None, table.lines)
    if table.hidden and width is not None:
        note = f"({', '.join(table.hidden)} hidden at {width} columns; -o wide shows all)"
        if len(note) > width:
            note = "(columns hidden; -o wide shows all)"
        click.echo(note, err=True)
