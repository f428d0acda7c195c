"""`deployplane listeners list|get|create|update|delete`: every listener command (get,
create and update are made by `edit.commands.add_editing`, as for deployments)."""

from __future__ import annotations

from typing import Annotated

import typer

from deployplane.api import models
from deployplane.api.client import ControlPlaneClient
from deployplane.cli.commands import resolve
from deployplane.cli.commands.common import (
    LISTENER_REF,
    LimitOption,
    command,
    listeners,
    page_size,
    take,
)
from deployplane.cli.commands.connection import call
from deployplane.cli.commands.edit import editing
from deployplane.cli.commands.edit.commands import add_editing
from deployplane.cli.commands.output import HeadersOption, Output, OutputOption, print_many

__all__ = ["delete_listener", "list_listeners"]


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
