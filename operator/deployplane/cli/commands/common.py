"""What the API commands share: their groups, options, paging and `--wait`.

Every command of the API groups is registered with `command()` (it then takes the
connection options and prints the exit codes in its help); the groups are defined here
and filled by one module per resource (`deployments`, `revisions`, `listeners`,
`lookups`), with `edit.commands` adding get/create/update of a kind.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Annotated, TypeVar

import typer
from rich.console import Console

from deployplane.api import models
from deployplane.cli.commands.connection import (
    EXIT_CODES_HELP,
    ConnectedCommand,
    ExitCode,
    call,
    fail,
    read_connection,
)
from deployplane.cli.commands.output import Output, print_one, resource_name
from deployplane.cli.commands.waiting import follow_revision

__all__ = [
    "DEPLOYMENT_REF",
    "LISTENER_REF",
    "LimitOption",
    "TimeoutOption",
    "WaitOption",
    "command",
    "deployments",
    "follow_new_revision",
    "group",
    "latest_revision",
    "listeners",
    "page_size",
    "print_final",
    "providers",
    "repos",
    "revisions",
    "stderr_console",
    "take",
]

T = TypeVar("T")

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
DEPLOYMENT_REF = "Deployment name or id (or deployment/NAME)."
LISTENER_REF = "Listener compute_id or id (or listener/NAME)."


def group(help_text: str) -> typer.Typer:
    """A command group whose callback reads the connection options."""
    return typer.Typer(
        no_args_is_help=True, help=f"{help_text}\n\n{EXIT_CODES_HELP}", callback=read_connection
    )


deployments = group("Deployments of agent servers.")
revisions = group("Revisions of a deployment.")
listeners = group("Listeners: the compute infrastructure deployments run on.")
repos = group("Git-host repositories available through an integration.")
providers = group("OAuth providers.")


def command(
    group: typer.Typer, name: str, help: str | None = None
) -> Callable[[Callable[..., T]], Callable[..., T]]:
    """Register a command that takes the connection options (and prints exit codes)."""
    return group.command(name, cls=ConnectedCommand, epilog=EXIT_CODES_HELP, help=help)


async def take(items: AsyncIterator[T], limit: int | None) -> list[T]:
    """The first `limit` items (all without one)."""
    taken: list[T] = []
    async for item in items:
        taken.append(item)
        if limit is not None and len(taken) >= limit:
            break
    return taken


def page_size(limit: int | None) -> int:
    """The page to ask for: the limit, at most the service's 100."""
    return min(limit, 100) if limit else 100


def print_final(final: models.Revision, output: Output) -> None:
    """Print a followed revision; exit 3 unless it ended DEPLOYED."""
    print_one(final, output)
    if final.status is not models.RevisionStatus.DEPLOYED:
        fail(f"revision {final.id} ended {final.status.value}", ExitCode.REVISION_FAILED)


def stderr_console() -> Console:
    """Where live progress goes: stderr, so stdout stays the result."""
    return Console(stderr=True, highlight=False)


def latest_revision(deployment: models.Deployment | None) -> str | None:
    """The id of a deployment's latest revision, if any."""
    latest = None if deployment is None else deployment.latest_revision_id
    return None if latest is None else str(latest)


def follow_new_revision(
    deployment: models.Deployment,
    before: str | None,
    output: Output,
    *,
    timeout: float | None = None,
) -> None:
    """With --wait: follow the deployment's latest revision if it is new (else there is
    nothing to wait for), then print as `deployments wait` does."""
    latest = deployment.latest_revision_id
    if latest is None or str(latest) == before:
        print_one(deployment, output)
        typer.echo(f"{resource_name(deployment)}: no new revision to wait for", err=True)
        return
    deployment_id, revision_id, console = str(deployment.id), str(latest), stderr_console()
    final = call(
        lambda c: follow_revision(
            c, deployment_id, revision_id, timeout=timeout, poll_interval=2.0, console=console
        )
    )
    print_final(final, output)
