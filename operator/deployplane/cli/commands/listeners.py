"""`deployplane listeners list|get|create|update|delete`: the `listeners` command group
(get, create and update are made by `edit.commands.add_editing`, as for deployments).
Each body imports what it runs."""

from __future__ import annotations

from typing import TYPE_CHECKING

import typer

from deployplane.cli.commands.completers import listener_names
from deployplane.cli.commands.edit.commands import add_editing
from deployplane.cli.commands.options import (
    LISTENER_REF,
    HeadersOption,
    LimitOption,
    ListenerArgument,
    Output,
    OutputOption,
    command,
    group,
)

if TYPE_CHECKING:
    from deployplane.api import models
    from deployplane.api.client import ControlPlaneClient

__all__ = ["app"]

app = group("Listeners: the compute infrastructure deployments run on.")


@command(app, "list")
def list_listeners(
    limit: LimitOption = None,
    output: OutputOption = Output.table,
    no_headers: HeadersOption = False,
) -> None:
    """List listeners."""
    from deployplane.api import models
    from deployplane.cli.commands.common import page_size, take
    from deployplane.cli.commands.connection import call
    from deployplane.cli.commands.output import print_many

    async def action(client: ControlPlaneClient) -> list[models.Listener]:
        return await take(client.iter_listeners(page_size=page_size(limit)), limit)

    print_many(call(action), models.Listener, output, headers=not no_headers)


add_editing(app, "listener", LISTENER_REF, listener_names)


@command(app, "delete")
def delete_listener(ref: ListenerArgument) -> None:
    """Delete a listener."""
    from deployplane.cli.commands import resolve
    from deployplane.cli.commands.connection import call

    async def action(client: ControlPlaneClient) -> str:
        listener_id = await resolve.listener_id(client, ref)
        await client.delete_listener(listener_id)
        return listener_id

    listener_id = call(action)
    shown = ref if ref == listener_id else f"{ref} ({listener_id})"
    typer.echo(f"listener {shown} deleted")
