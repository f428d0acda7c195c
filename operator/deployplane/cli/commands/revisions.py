"""`deployplane revisions list|get|redeploy`: the revisions of a deployment."""

from __future__ import annotations

from typing import Annotated

import typer

from deployplane.api import models
from deployplane.api.client import ControlPlaneClient
from deployplane.cli.commands import resolve
from deployplane.cli.commands.common import (
    DEPLOYMENT_REF,
    LimitOption,
    TimeoutOption,
    WaitOption,
    command,
    follow_new_revision,
    page_size,
    revisions,
    take,
)
from deployplane.cli.commands.connection import call
from deployplane.cli.commands.output import HeadersOption, Output, OutputOption, print_many, print_one

__all__ = ["get_revision", "list_revisions", "redeploy_revision"]


@command(revisions, "list")
def list_revisions(
    ref: Annotated[str, typer.Argument(help=DEPLOYMENT_REF, metavar="DEPLOYMENT")],
    status: Annotated[
        models.RevisionStatus | None,
        typer.Option(help="Only revisions in this status.", case_sensitive=False),
    ] = None,
    limit: LimitOption = None,
    output: OutputOption = Output.table,
    no_headers: HeadersOption = False,
) -> None:
    """List the revisions of a deployment; ACTIVE marks the one serving (*)."""

    async def action(client: ControlPlaneClient) -> tuple[list[models.Revision], str | None]:
        deployment = await client.get_deployment(await resolve.deployment_id(client, ref))
        items = client.iter_revisions(
            str(deployment.id),
            page_size=page_size(limit),
            status=[status.value] if status else None,
        )
        active = deployment.active_revision_id
        return await take(items, limit), None if active is None else str(active)

    found, active = call(action)
    print_many(found, models.Revision, output, headers=not no_headers, active=active)


@command(revisions, "get")
def get_revision(
    ref: Annotated[str, typer.Argument(help=DEPLOYMENT_REF, metavar="DEPLOYMENT")],
    revision_id: Annotated[str, typer.Argument(help="Revision id.")],
    output: OutputOption = Output.table,
) -> None:
    """Show one revision."""
    rev = resolve.split_kind(revision_id, "revision")

    async def action(client: ControlPlaneClient) -> models.Revision:
        return await client.get_revision(await resolve.deployment_id(client, ref), rev)

    print_one(call(action), output)


@command(revisions, "redeploy")
def redeploy_revision(
    ref: Annotated[str, typer.Argument(help=DEPLOYMENT_REF, metavar="DEPLOYMENT")],
    revision_id: Annotated[str, typer.Argument(help="The earlier revision to roll back to.")],
    wait: WaitOption = False,
    timeout: TimeoutOption = None,
    output: OutputOption = Output.table,
) -> None:
    """Roll back: a new revision with that revision's source revision config.

    Prints the deployment; with --wait, follows the new revision and exits as
    `deployments wait` does (0 DEPLOYED, 3 ended otherwise).
    """
    rev = resolve.split_kind(revision_id, "revision")

    async def action(client: ControlPlaneClient) -> models.Deployment:
        return await client.redeploy_revision(await resolve.deployment_id(client, ref), rev)

    deployment = call(action)
    if not wait:
        print_one(deployment, output)
        return
    follow_new_revision(deployment, None, output, timeout=timeout)
