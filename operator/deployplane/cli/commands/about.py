"""`deployplane version` (the root's `--version` prints the first line alone).

The published contract has no version endpoint, so `version` reports what can be known
faithfully: this CLI's version and whether the control plane answers (one published
read, `GET /v2/listeners?limit=1`, with the configured credentials), with the URL.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from deployplane import __version__
from deployplane.cli.commands import connection
from deployplane.cli.commands.connection import (
    EXIT_CODES_HELP,
    ConnectedCommand,
    ExitCode,
    current_settings,
)

if TYPE_CHECKING:
    from deployplane.api.client import ControlPlaneClient

__all__ = ["version"]


@click.command("version", cls=ConnectedCommand, epilog=EXIT_CODES_HELP)
def version() -> None:
    """Print the CLI's version and whether the control plane is reachable."""
    import asyncio

    click.echo(f"client: deployplane {__version__}")
    settings = current_settings()

    async def probe() -> tuple[bool, str]:
        # looked up at call time, as in connection.call, so tests can pass a transport
        async with connection.make_client(settings) as client:
            return await _reachable(client)

    reachable, said = asyncio.run(probe())
    click.echo(f"server: {settings.url} {said}")
    if not reachable:
        raise click.exceptions.Exit(int(ExitCode.API_ERROR))


async def _reachable(client: ControlPlaneClient) -> tuple[bool, str]:
    from deployplane.api.errors import ControlPlaneError

    try:
        await client.list_listeners(limit=1)
    except ControlPlaneError as exc:
        if exc.status_code is None:
            return False, f"unreachable ({exc})"
        return True, f"reachable, answered {exc.status_code} ({exc.detail or 'no detail'})"
    return True, "reachable (API v2; the service publishes no version number)"
