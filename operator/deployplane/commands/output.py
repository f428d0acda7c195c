"""Rendering API models for people (rich tables) and for programs (JSON, YAML).

JSON and YAML are the API's own snake_case shape (`model_dump(mode="json")`), so the
output of `get -o yaml` can be edited and fed back to `create -f` / `update -f`.
Tables pick a few columns per kind for lists, and show every top-level field for one
resource.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Sequence
from enum import StrEnum
from typing import Annotated, Any

import typer
import yaml
from pydantic import BaseModel
from rich.console import Console
from rich.table import Table

from deployplane.api.models import Deployment, GitRepository, Listener, Revision

__all__ = ["Output", "OutputOption", "print_many", "print_one", "stdout_console"]


class Output(StrEnum):
    """Output formats."""

    table = "table"
    json = "json"
    yaml = "yaml"


OutputOption = Annotated[
    Output, typer.Option("--output", "-o", help="Output format.", case_sensitive=False)
]

Column = tuple[str, Callable[[Any], object]]


def _revision_ref(rev: Revision) -> object:
    cfg = rev.source_revision_config
    return cfg.image_uri or cfg.repo_ref or cfg.graph_config_path


_COLUMNS: dict[type[BaseModel], list[Column]] = {
    Deployment: [
        ("ID", lambda d: d.id),
        ("NAME", lambda d: d.name),
        ("SOURCE", lambda d: d.source.value),
        ("STATUS", lambda d: d.status.value),
        ("LATEST REVISION", lambda d: d.latest_revision_id),
        ("ACTIVE REVISION", lambda d: d.active_revision_id),
        ("UPDATED", lambda d: d.updated_at.isoformat(timespec="seconds")),
    ],
    Revision: [
        ("ID", lambda r: r.id),
        ("STATUS", lambda r: r.status.value),
        ("SOURCE", lambda r: r.source.value),
        ("REF / IMAGE", _revision_ref),
        ("COMMIT", lambda r: r.source_revision_config.repo_commit_sha),
        ("CREATED", lambda r: r.created_at.isoformat(timespec="seconds")),
    ],
    Listener: [
        ("ID", lambda x: x.id),
        ("COMPUTE TYPE", lambda x: x.compute_type.value),
        ("COMPUTE ID", lambda x: x.compute_id),
        (
            "NAMESPACES",
            lambda x: ",".join(x.compute_config.k8s_namespaces or []) if x.compute_config else None,
        ),
        ("VERSION", lambda x: x.version),
        ("UPDATED", lambda x: x.updated_at.isoformat(timespec="seconds")),
    ],
    GitRepository: [
        ("ID", lambda g: g.id),
        ("OWNER", lambda g: g.owner),
        ("NAME", lambda g: g.name),
        ("DEFAULT BRANCH", lambda g: g.default_branch),
        ("URL", lambda g: g.url),
        ("INTEGRATION", lambda g: g.host_integration_id),
    ],
}


def stdout_console() -> Console:
    """A console on the current stdout; wide when piped so ids are never cut."""
    return Console(width=None if sys.stdout.isatty() else 250, highlight=False)


def _cell(value: object) -> str:
    if value is None:
        return "-"
    if isinstance(value, dict | list):
        return json.dumps(value, separators=(",", ":"))
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
    table = Table(show_header=True, header_style="bold", box=None)
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
    table = Table(show_header=True, header_style="bold", box=None)
    columns = _COLUMNS[kind]
    for title, _ in columns:
        table.add_column(title, no_wrap=True)
    for model in models:
        table.add_row(*(_cell(get(model)) for _, get in columns))
    stdout_console().print(table)
