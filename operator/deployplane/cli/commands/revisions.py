"""`deployplane revisions list|get|redeploy`: the `revisions` command group, the
revisions of a deployment. Each command imports what it runs."""

from __future__ import annotations

from typing import TYPE_CHECKING

from deployplane.api.enums import RevisionStatus
from deployplane.cli.commands.completers import revision_ids
from deployplane.cli.commands.options import (
    Output,
    command,
    deployment_argument,
    group,
    headers_option,
    limit_option,
    output_option,
    timeout_option,
    wait_option,
)
from deployplane.cli.params import EnumChoice, argument, option

if TYPE_CHECKING:
    from deployplane.api import models
    from deployplane.api.client import ControlPlaneClient

__all__ = ["revisions"]

revisions = group("revisions", "Inspect the revisions of a deployment.")


@command(revisions, "list")
@deployment_argument
@option(
    "--status",
    type=EnumChoice(RevisionStatus),
    metavar="STATUS",
    help=f"Only revisions in this status: {', '.join(s.lower() for s in RevisionStatus)}.",
)
@limit_option
@output_option()
@headers_option
def list_revisions(
    ref: str, status: RevisionStatus | None, limit: int | None, output: Output, no_headers: bool
) -> None:
    """List the revisions of a deployment; ACTIVE marks the one serving (*)."""
    from deployplane.api import models
    from deployplane.cli.commands import resolve
    from deployplane.cli.commands.common import page_size, take
    from deployplane.cli.commands.connection import call
    from deployplane.cli.commands.output import print_many

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
@deployment_argument
@argument("revision_id", help="Revision id.", shell_complete=revision_ids)
@output_option()
def get_revision(ref: str, revision_id: str, output: Output) -> None:
    """Show one revision."""
    from deployplane.cli.commands import resolve
    from deployplane.cli.commands.connection import call
    from deployplane.cli.commands.output import print_one

    rev = resolve.split_kind(revision_id, "revision")

    async def action(client: ControlPlaneClient) -> models.Revision:
        return await client.get_revision(await resolve.deployment_id(client, ref), rev)

    print_one(call(action), output)


@command(revisions, "redeploy")
@deployment_argument
@argument("revision_id", help="The earlier revision to roll back to.", shell_complete=revision_ids)
@wait_option
@timeout_option
@output_option()
def redeploy_revision(
    ref: str, revision_id: str, wait: bool, timeout: float | None, output: Output
) -> None:
    """Roll back: a new revision with that revision's source revision config.

    Prints the deployment; with --wait, follows the new revision and exits as
    `deployments wait` does (0 DEPLOYED, 3 ended otherwise).
    """
    from deployplane.cli.commands import resolve
    from deployplane.cli.commands.common import follow_new_revision
    from deployplane.cli.commands.connection import call
    from deployplane.cli.commands.output import print_one

    rev = resolve.split_kind(revision_id, "revision")

    async def action(client: ControlPlaneClient) -> models.Deployment:
        return await client.redeploy_revision(await resolve.deployment_id(client, ref), rev)

    deployment = call(action)
    if not wait:
        print_one(deployment, output)
        return
    follow_new_revision(deployment, None, output, timeout=timeout)
