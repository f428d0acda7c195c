"""What the API commands share when they run: paging, `--wait` and the final print.

The options and the command groups are in `options` (imported by every command's
definition, so cheap); this module is imported by the commands' bodies.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, TypeVar

import click

from deployplane.api.enums import RevisionStatus
from deployplane.cli.commands.connection import ExitCode, call, fail
from deployplane.cli.commands.options import Output
from deployplane.cli.commands.output import print_one, resource_name

if TYPE_CHECKING:
    from rich.console import Console

    from deployplane.api import models

__all__ = [
    "follow_new_revision",
    "latest_revision",
    "page_size",
    "print_final",
    "stderr_console",
    "take",
]

T = TypeVar("T")


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
    if final.status is not RevisionStatus.DEPLOYED:
        fail(f"revision {final.id} ended {final.status.value}", ExitCode.REVISION_FAILED)


def stderr_console() -> Console:
    """Where live progress goes: stderr, so stdout stays the result."""
    from rich.console import Console

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
        click.echo(f"{resource_name(deployment)}: no new revision to wait for", err=True)
        return
    from deployplane.cli.commands.waiting import follow_revision

    deployment_id, revision_id, console = str(deployment.id), str(latest), stderr_console()
    final = call(
        lambda c: follow_revision(
            c, deployment_id, revision_id, timeout=timeout, poll_interval=2.0, console=console
        )
    )
    print_final(final, output)
