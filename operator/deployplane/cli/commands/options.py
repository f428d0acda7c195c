"""The options the commands share, and how a command group is made: importable at no
cost beyond typer, because every command's definition uses them.

`-o/--output` is the output format wherever it appears (kubectl's convention): `table`
and `wide` for people, `json`, `yaml` and `name` for programs. JSON and YAML print the
control plane's own fields (its snake_case names), without the null ones.
"""

from __future__ import annotations

from collections.abc import Callable
from enum import StrEnum
from typing import Annotated, TypeVar

import typer

from deployplane.api.enums import AgentEnvironment
from deployplane.cli.commands.completers import deployment_names, listener_names
from deployplane.cli.commands.connection import (
    EXIT_CODES_HELP,
    ConnectedCommand,
    read_connection,
)

__all__ = [
    "DEPLOYMENT_REF",
    "LISTENER_REF",
    "AgentEnvironmentOption",
    "AgentIdOption",
    "DeploymentArgument",
    "FileOption",
    "HeadersOption",
    "LimitOption",
    "ListenerArgument",
    "Output",
    "OutputOption",
    "TimeoutOption",
    "WaitOption",
    "command",
    "group",
]

T = TypeVar("T")


class Output(StrEnum):
    """Output formats."""

    table = "table"
    wide = "wide"
    json = "json"
    yaml = "yaml"
    name = "name"


OutputOption = Annotated[
    Output,
    typer.Option(
        "--output",
        "-o",
        help="table, wide (every column), json or yaml (the control plane's own fields, "
        "nulls left out), or name (kind/name).",
        case_sensitive=False,
    ),
]
HeadersOption = Annotated[
    bool, typer.Option("--no-headers", help="Tables without the header line.")
]
LimitOption = Annotated[
    int | None,
    typer.Option("--limit", min=1, help="Show at most this many (default: all, page by page)."),
]
WaitOption = Annotated[
    bool,
    typer.Option(
        "--wait",
        help="Follow the new revision until it is terminal (exit 0 DEPLOYED, 3 otherwise).",
    ),
]
TimeoutOption = Annotated[
    float | None, typer.Option("--timeout", min=0, help="With --wait: give up after S seconds.")
]
FileOption = Annotated[
    str,
    typer.Option(
        "--file", "-f", help="YAML or JSON body in the API's snake_case shape; '-' for stdin."
    ),
]
AgentIdOption = Annotated[str | None, typer.Option("--agent-id", help="The agent's id.")]
AgentEnvironmentOption = Annotated[
    AgentEnvironment | None,
    typer.Option("--agent-environment", help="The agent's environment.", case_sensitive=False),
]
DEPLOYMENT_REF = "Deployment name or id (or deployment/NAME)."
LISTENER_REF = "Listener compute_id or id (or listener/NAME)."
DeploymentArgument = Annotated[
    str,
    typer.Argument(help=DEPLOYMENT_REF, metavar="DEPLOYMENT", autocompletion=deployment_names),
]
ListenerArgument = Annotated[
    str,
    typer.Argument(help=LISTENER_REF, metavar="LISTENER", autocompletion=listener_names),
]


def group(help_text: str) -> typer.Typer:
    """A command group whose callback reads the connection options; plain help (click's
    format: wrapped at word boundaries, at most 80 columns)."""
    return typer.Typer(
        no_args_is_help=True,
        help=f"{help_text}\n\n{EXIT_CODES_HELP}",
        callback=read_connection,
        rich_markup_mode=None,
        add_completion=False,
    )


def command(
    group: typer.Typer, name: str, help: str | None = None
) -> Callable[[Callable[..., T]], Callable[..., T]]:
    """Register a command that takes the connection options (and prints exit codes)."""
    return group.command(name, cls=ConnectedCommand, epilog=EXIT_CODES_HELP, help=help)
