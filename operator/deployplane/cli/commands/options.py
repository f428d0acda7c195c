"""The options the commands share, and how an API command group is made: importable at
no cost beyond click, because every command's declaration uses them.

`-o/--output` is the output format wherever it appears (kubectl's convention): `table`
and `wide` for people, `json`, `yaml` and `name` for programs. JSON and YAML print the
control plane's own fields (its snake_case names), without the null ones.
"""

from __future__ import annotations

from collections.abc import Callable
from enum import StrEnum
from typing import Any, TypeVar

import click

from deployplane.cli.commands.completers import deployment_names, listener_names
from deployplane.cli.commands.connection import (
    CONNECTION_PARAMS,
    EXIT_CODES_HELP,
    ConnectedCommand,
    read_connection,
)
from deployplane.cli.helptext import Group
from deployplane.cli.params import EnumChoice, argument, option

__all__ = [
    "DEPLOYMENT_REF",
    "LISTENER_REF",
    "Output",
    "command",
    "deployment_argument",
    "file_option",
    "group",
    "headers_option",
    "limit_option",
    "listener_argument",
    "output_option",
    "timeout_option",
    "wait_option",
]

F = TypeVar("F", bound=Callable[..., Any])


class Output(StrEnum):
    """Output formats."""

    table = "table"
    wide = "wide"
    json = "json"
    yaml = "yaml"
    name = "name"


OUTPUT_HELP = (
    "table, wide (every column), json or yaml (the control plane's own fields, nulls left "
    "out), or name (kind/name)."
)


def output_option(help: str = OUTPUT_HELP) -> Callable[[F], F]:
    """`-o/--output table|wide|json|yaml|name`, default `table`."""
    return option("--output", "-o", type=EnumChoice(Output), default=Output.table.value, help=help)


headers_option = option("--no-headers", is_flag=True, help="Tables without the header line.")
limit_option = option(
    "--limit",
    type=click.IntRange(min=1),
    help="Show at most this many (default: all, page by page).",
)
wait_option = option(
    "--wait",
    is_flag=True,
    help="Follow the new revision until it is terminal (exit 0 DEPLOYED, 3 otherwise).",
)
timeout_option = option(
    "--timeout", type=click.FloatRange(min=0), help="With --wait: give up after S seconds."
)
file_option = option(
    "--file",
    "-f",
    required=True,
    help="YAML or JSON body in the API's snake_case shape; '-' for stdin.",
)
DEPLOYMENT_REF = "Deployment name or id (or deployment/NAME)."
LISTENER_REF = "Listener compute_id or id (or listener/NAME)."
deployment_argument = argument(
    "ref", metavar="DEPLOYMENT", help=DEPLOYMENT_REF, shell_complete=deployment_names
)
listener_argument = argument(
    "ref", metavar="LISTENER", help=LISTENER_REF, shell_complete=listener_names
)


def group(name: str, help_text: str) -> Group:
    """An API command group: its connection options, kept by its callback for its
    commands; plain help (click's format: wrapped at word boundaries, at most 80
    columns). The first sentence of `help_text` is its line in `deployplane --help`."""
    return Group(
        name=name,
        help=f"{help_text}\n\n{EXIT_CODES_HELP}",
        callback=read_connection,
        params=list(CONNECTION_PARAMS),
        no_args_is_help=True,
    )


def command(group: click.Group, name: str, help: str | None = None) -> Callable[[F], Any]:
    """Register a command that takes the connection options (and prints exit codes)."""
    decorator: Callable[[F], Any] = group.command(
        name, cls=ConnectedCommand, epilog=EXIT_CODES_HELP, help=help
    )
    return decorator
