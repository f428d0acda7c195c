"""`deployplane listeners list|get|create|update|delete`: the `listeners` command group
(get, create and update are made by `edit.commands.add_editing`, as for deployments).
Each command imports what it runs."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from deployplane.cli.commands.completers import listener_names
from deployplane.cli.commands.edit.commands import add_editing
from deployplane.cli.commands.options import (
    LISTENER_REF,
    Output,
    command,
    group,
    headers_option,
    limit_option,
    listener_argument,
    output_option,
)

if TYPE_CHECKING:
    from deployplane.api import models
    from deployplane.api.client import ControlPlaneClient

__all__ = ["listeners"]

listeners = group(
    "listeners",
    "Manage listeners (compute infrastructure).\n\nA listener is the compute "
    "infrastructure deployments run on: a Kubernetes cluster and its namespaces.",
)


@command(listeners, "list")
@limit_option
@output_option()
@headers_option
def list_listeners(limit: int | None, output: Output, no_headers: bool) -> None:
    """List listeners."""
    from deployplane.api import models
    from deployplane.cli.commands.common import page_size, take
    from deployplane.cli.commands.connection import call
    from deployplane.cli.commands.output import print_many

    async def action(client: ControlPlaneClient) -> list[models.Listener]:
        return await take(client.iter_listeners(page_size=page_size(limit)), limit)

    print_many(call(action), models.Listener, output, headers=not no_headers)


add_editing(listeners, "listener", LISTENER_REF, listener_names)


@command(listeners, "delete")
@listener_argument
def delete_listener(ref: str) -> None:
    """Delete a listener."""
    from deployplane.cli.commands import resolve
    from deployplane.cli.commands.connection import call

    async def action(client: ControlPlaneClient) -> str:
        listener_id = await resolve.listener_id(client, ref)
        await client.delete_listener(listener_id)
        return listener_id

    listener_id = call(action)
    shown = ref if ref == listener_id else f"{ref} ({listener_id})"
    click.echo(f"listener {shown} deleted")
