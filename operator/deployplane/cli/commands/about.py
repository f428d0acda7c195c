"""`deployplane --version` and `deployplane version`.

The published contract has no version endpoint, so `version` reports what can be known
faithfully: this CLI's version and whether the control plane answers (one published
read, `GET /v2/listeners?limit=1`, with the configured credentials), with the URL.
"""

from __future__ import annotations

import typer

from deployplane import __version__
from deployplane.api.client import ControlPlaneClient
from deployplane.api.errors import ControlPlaneError
from deployplane.cli.commands import connection
from deployplane.cli.commands.connection import ExitCode, current_settings

__all__ = ["print_version", "version"]


def print_version(value: bool) -> None:
    """The eager `--version` option of the root command."""
    if value:
        typer.echo(f"deployplane {__version__}")
        raise typer.Exit()


def version() -> None:
    """Print the CLI's version and whether the control plane is reachable."""
    import asyncio

    typer.echo(f"client: deployplane {__version__}")
    settings = current_settings()

    async def probe() -> tuple[bool, str]:
        # looked up at call time, as in connection.call, so tests can pass a transport
        async with connection.make_client(settings) as client:
            return await _reachable(client)

    reachable, said = asyncio.run(probe())
    typer.echo(f"server: {settings.url} {said}")
    if not reachable:
        raise typer.Exit(int(ExitCode.API_ERROR))


async def _reachable(client: ControlPlaneClient) -> tuple[bool, str]:
    try:
        await client.list_listeners(limit=1)
    except ControlPlaneError as exc:
        if exc.status_code is None:
            return False, f"unreachable ({exc})"
        return True, f"reachable, answered {exc.status_code} ({exc.detail or 'no detail'})"
    return True, "reachable (API v2; the service publishes no version number)"
