"""`revisions list|get|redeploy`, `listeners list|get|create|update|delete`,
`repos list`, `providers get`."""

from __future__ import annotations

from typing import Annotated

import typer

from deployplane.api import models
from deployplane.api.client import ControlPlaneClient
from deployplane.commands import editing, resolve
from deployplane.commands.common import (
    DEPLOYMENT_REF,
    LISTENER_REF,
    LimitOption,
    TimeoutOption,
    WaitOption,
    command,
    follow_new_revision,
    listeners,
    page_size,
    providers,
    repos,
    revisions,
    take,
)
from deployplane.commands.connection import call
from deployplane.commands.editcommands import add_editing
from deployplane.commands.output import HeadersOption, Output, OutputOption, print_many, print_one

__all__ = [
    "delete_listener",
    "get_provider",
    "get_revision",
    "list_listeners",
    "list_repositories",
    "list_revisions",
    "redeploy_revision",
]


# ---------------------------------------------------------------------- revisions


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


# ---------------------------------------------------------------------- listeners


@command(listeners, "list")
def list_listeners(
    limit: LimitOption = None,
    output: OutputOption = Output.table,
    no_headers: HeadersOption = False,
) -> None:
    """List listeners."""

    async def action(client: ControlPlaneClient) -> list[models.Listener]:
        return await take(client.iter_listeners(page_size=page_size(limit)), limit)

    print_many(call(action), models.Listener, output, headers=not no_headers)


add_editing(listeners, editing.LISTENER, LISTENER_REF)


@command(listeners, "delete")
def delete_listener(
    ref: Annotated[str, typer.Argument(help=LISTENER_REF, metavar="LISTENER")],
) -> None:
    """Delete a listener."""

    async def action(client: ControlPlaneClient) -> str:
        listener_id = await resolve.listener_id(client, ref)
        await client.delete_listener(listener_id)
        return listener_id

    listener_id = call(action)
    shown = ref if ref == listener_id else f"{ref} ({listener_id})"
    typer.echo(f"listener {shown} deleted")


# -------------------------------------------------------------- read-only lookups


@command(repos, "list")
def list_repositories(
    integration_id: Annotated[str, typer.Argument(help="Git-host integration id.")],
    output: OutputOption = Output.table,
    no_headers: HeadersOption = False,
) -> None:
    """List the repositories an integration can deploy from."""
    found = call(lambda c: c.list_repositories(integration_id))
    print_many(found, models.GitRepository, output, headers=not no_headers)


@command(providers, "get")
def get_provider(
    provider_id: Annotated[str, typer.Argument(help="OAuth provider id.")],
    output: OutputOption = Output.table,
) -> None:
    """Show one OAuth provider."""
    print_one(call(lambda c: c.get_oauth_provider(provider_id)), output)
