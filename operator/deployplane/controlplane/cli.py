"""`deployplane controlplane serve`: run the emulator with uvicorn.

Scripts wait for the one line `deployplane control plane listening on http://HOST:PORT`
on stdout (printed once requests are accepted, so `--port 0` is usable); without
`--config` the dev API key is printed once just before it, and nowhere else.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import sys
from pathlib import Path

import typer

from deployplane.controlplane.settings import (
    DEFAULT_DATABASE_URL,
    ConfigError,
    Settings,
    dev_config,
    load_config,
)

__all__ = ["app", "serve_forever"]

app = typer.Typer(no_args_is_help=True)


async def serve_forever(settings: Settings, *, host: str, port: int, banner: list[str]) -> None:
    """Runs until interrupted; prints `banner` then the listening line once started."""
    # Imported here: every `deployplane ...` command loads this module, and the web stack
    # (FastAPI, SQLAlchemy, uvicorn) would add seconds to each of them.
    import uvicorn

    from deployplane.controlplane.app import create_app

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    # Accepted connections inherit this on Linux. Without it the response body, written
    # after the headers, waits for the client's delayed ACK: ~40 ms on every request.
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.bind((host, port))
    bound_port = sock.getsockname()[1]
    config = uvicorn.Config(
        create_app(settings),
        log_level="warning",
        access_log=False,  # an access log per request costs throughput and says little here
        lifespan="on",
    )
    server = uvicorn.Server(config)
    serving = asyncio.create_task(server.serve(sockets=[sock]))
    while not server.started:
        if serving.done():
            await serving  # startup failed: surface the error
            return
        await asyncio.sleep(0.01)
    for line in banner:
        print(line, flush=True)
    print(f"deployplane control plane listening on http://{host}:{bound_port}", flush=True)
    await serving


@app.command()
def serve(
    host: str = typer.Option("127.0.0.1", help="Address to listen on."),
    port: int = typer.Option(8124, help="Port; 0 picks a free one."),
    database: str = typer.Option(
        DEFAULT_DATABASE_URL,
        # From the environment too: a PostgreSQL URL holds a password, and the command
        # line is visible to every user of the machine (ps).
        envvar="DEPLOYPLANE_DATABASE_URL",
        show_envvar=True,
        help="SQLAlchemy async URL: sqlite+aiosqlite:///file or "
        "postgresql+asyncpg://user:password@host/db (see docs/emulator.md).",
    ),
    config: Path | None = typer.Option(None, help="YAML config (workspaces, pipeline, faults)."),
    api_key: str | None = typer.Option(
        None,
        help="Without --config: the dev workspace's API key instead of a generated one. "
        "With --config: also accepted for the first workspace.",
    ),
    strict: bool = typer.Option(
        False,
        "--strict",
        help="Serve only the published contract: every emulator extension off "
        "(also the config key `strict: true`).",
    ),
) -> None:
    """Run the control-plane emulator."""
    banner: list[str] = []
    if config is None:
        emulator_config, key = dev_config(api_key=api_key)
        if api_key is None:
            banner.append(f"deployplane dev API key: {key}")
    else:
        try:
            emulator_config = load_config(config)
        except ConfigError as exc:
            print(f"error: {exc}", file=sys.stderr)
            raise typer.Exit(2) from None
        if api_key is not None and emulator_config.workspaces:
            first = emulator_config.workspaces[0]
            updated = first.model_copy(update={"api_keys": [*first.api_keys, api_key]})
            emulator_config = emulator_config.model_copy(
                update={"workspaces": [updated, *emulator_config.workspaces[1:]]}
            )
    if strict:
        emulator_config = emulator_config.model_copy(update={"strict": True})
    settings = Settings(database_url=database, config=emulator_config)
    # Imported here for the reason given in serve_forever.
    from deployplane.controlplane.db import DatabaseUnavailable, check_database

    try:
        asyncio.run(check_database(database))
    except DatabaseUnavailable as exc:
        print(f"error: {exc}", file=sys.stderr)
        raise typer.Exit(2) from None
    with contextlib.suppress(KeyboardInterrupt):  # Ctrl-C is the normal way to stop
        asyncio.run(serve_forever(settings, host=host, port=port, banner=banner))
