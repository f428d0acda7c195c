"""`deployplane controlplane serve`: run the emulator with uvicorn.

Scripts wait for the one line `deployplane control plane listening on http://HOST:PORT`
on stdout (printed once requests are accepted, so `--port 0` is usable); without
`--config` the dev API key is printed just before it, and nowhere else. The generated
dev key is kept in the database (`db.check_database`): every restart on the same
database prints, and accepts, the same key. A port already taken is one line, exit 1.
Its command line: `deployplane.cli.programs.emulator`.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from deployplane.emulator.settings import (
    ConfigError,
    EmulatorConfig,
    ImageBuildConfig,
    Settings,
    dev_config,
    load_config,
    new_dev_key,
    parse_config,
)
from deployplane.serving.errors import StartupError

if TYPE_CHECKING:
    from deployplane.emulator.builtindataplane import DataPlaneRunner

__all__ = ["serve_emulator", "serve_forever"]


class CannotListen(Exception):
    """The address cannot be bound (a port in use, an address not on this machine)."""


def listening_socket(host: str, port: int) -> socket.socket:
    """A socket bound to host:port, or `CannotListen` with the reason in one line."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    # Accepted connections inherit this on Linux. Without it the response body, written
    # after the headers, waits for the client's delayed ACK: ~40 ms on every request.
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        reason = exc.strerror or str(exc)
        raise CannotListen(f"cannot listen on {host}:{port}: {reason.lower()}") from None
    return sock


async def serve_forever(
    settings: Settings,
    *,
    sock: socket.socket,
    host: str,
    banner: list[str],
    builtin: tuple[str, DataPlaneRunner] | None = None,
) -> None:
    """Runs until interrupted on the bound `sock`; prints `banner` then the listening
    line once started. With `builtin` (a namespace and the agents' runner), the built-in
    data plane runs beside (`emulator.builtindataplane`); its failure to start stops the
    server."""
    # Imported here, once the options are checked: the web stack (FastAPI, SQLAlchemy,
    # uvicorn) takes seconds to import, and a bad option is answered without it.
    import uvicorn

    from deployplane.emulator.web.app import create_app
    from deployplane.emulator.web.middleware import FaultState

    bound_port = sock.getsockname()[1]
    app = create_app(settings)
    config = uvicorn.Config(
        app,
        log_level="warning",
        access_log=False,  # an access log per request costs throughput and says little here
        lifespan="on",
    )
    faults: FaultState = app.state.faults

    class Server(uvicorn.Server):
        async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
            # uvicorn waits for requests in flight before the lifespan ends: end their
            # injected delays first, or SIGTERM would wait on them.
            faults.stop()
            await super().shutdown(sockets=sockets)

    server = Server(config)
    serving = asyncio.create_task(server.serve(sockets=[sock]))
    while not server.started:
        if serving.done():
            await serving  # startup failed: surface the error
            return
        await asyncio.sleep(0.01)
    for line in banner:
        print(line, flush=True)
    print(f"deployplane control plane listening on http://{host}:{bound_port}", flush=True)
    if builtin is None:
        await serving
        return
    await _with_builtin(settings, serving, server, f"http://{host}:{bound_port}", *builtin)


async def _with_builtin(
    settings: Settings,
    serving: asyncio.Task[None],
    server: Any,
    url: str,
    namespace: str,
    runner: DataPlaneRunner,
) -> None:
    """Serves with the built-in data plane beside; a data plane that cannot start is
    one line on stderr and the end of the server (exit 2)."""
    from deployplane.emulator.builtindataplane import run_builtin_dataplane

    builtin = asyncio.create_task(run_builtin_dataplane(settings.config, url, namespace, runner))
    await asyncio.wait({serving, builtin}, return_when=asyncio.FIRST_COMPLETED)
    if builtin.done() and not builtin.cancelled() and builtin.exception() is not None:
        server.should_exit = True
        await serving
        error = builtin.exception()
        assert error is not None
        if isinstance(error, StartupError):
            print(f"error: {error}", file=sys.stderr)
            raise click.exceptions.Exit(2)
        raise error
    builtin.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await builtin
    await serving


def _emulator_config(
    config: Path | None, api_key: str | None, admin_key: str | None, banner: list[str]
) -> EmulatorConfig:
    """The config of `serve`'s options; a generated dev key is added to `banner`."""
    if config is None:
        emulator_config, key = dev_config(api_key=api_key)
        if api_key is None:
            banner.append(f"deployplane dev API key: {key}")
    else:
        emulator_config = load_config(config)
        if api_key is not None and emulator_config.workspaces:
            first = emulator_config.workspaces[0]
            updated = first.model_copy(update={"api_keys": [*first.api_keys, api_key]})
            emulator_config = emulator_config.model_copy(
                update={"workspaces": [updated, *emulator_config.workspaces[1:]]}
            )
    if admin_key is not None:  # validated again: it must not be a workspace credential
        emulator_config = parse_config(
            {
                **emulator_config.model_dump(),
                "admin_api_keys": [*emulator_config.admin_api_keys, admin_key],
            },
            source="--admin-key",
        )
    return emulator_config


def _prepared(
    database: str,
    config: Path | None,
    api_key: str | None,
    admin_key: str | None,
    *,
    strict: bool,
) -> tuple[EmulatorConfig, list[str]]:
    """The emulator's config and the lines to print before the listening one, after
    the database is opened once (`ConfigError`, `DatabaseUnavailable`)."""
    from deployplane.emulator.store.db import check_database  # as in serve_forever

    banner: list[str] = []
    if config is None and api_key is None:
        # The dev key lives with the database: the same one at every restart.
        api_key = asyncio.run(check_database(database, dev_api_key=new_dev_key()))
        banner.append(f"deployplane dev API key: {api_key}")
    emulator_config = _emulator_config(config, api_key, admin_key, banner)
    if strict:
        emulator_config = emulator_config.model_copy(update={"strict": True})
    asyncio.run(check_database(database, secret_digest_key=emulator_config.secret_digest_key))
    return emulator_config, banner


def serve_emulator(
    *,
    host: str,
    port: int,
    database: str,
    config: Path | None,
    api_key: str | None,
    admin_key: str | None,
    strict: bool,
    build_images: bool,
    builtin_dataplane: str | None,
    builtin_runner: DataPlaneRunner | None,
) -> None:
    """Run the emulator with the options of `deployplane controlplane serve`
    (`deployplane.cli.programs.emulator`, where each is described). `builtin_runner`
    runs the built-in data plane's agents (`--builtin-dataplane`): the listener agent's,
    handed over by the command line, so that the emulator imports none of it."""
    from deployplane.emulator.store.db import DatabaseUnavailable  # as in serve_forever

    try:
        if builtin_dataplane is not None and strict:
            raise ConfigError("--builtin-dataplane needs the data-plane extension: not --strict")
        if builtin_dataplane is not None and builtin_runner is None:
            raise ConfigError("--builtin-dataplane: no listener agent to run in this process")
        emulator_config, banner = _prepared(database, config, api_key, admin_key, strict=strict)
    except (ConfigError, DatabaseUnavailable) as exc:
        print(f"error: {exc}", file=sys.stderr)
        raise click.exceptions.Exit(2) from None
    if build_images and emulator_config.image_builds is None:
        emulator_config = emulator_config.model_copy(update={"image_builds": ImageBuildConfig()})
    settings = Settings(database_url=database, config=emulator_config)
    try:
        sock = listening_socket(host, port)
    except CannotListen as exc:
        print(f"error: {exc}", file=sys.stderr)
        raise click.exceptions.Exit(1) from None
    builtin = (
        None
        if builtin_dataplane is None or builtin_runner is None
        else (builtin_dataplane, builtin_runner)
    )
    forever = serve_forever(settings, sock=sock, host=host, banner=banner, builtin=builtin)
    with contextlib.suppress(KeyboardInterrupt):  # Ctrl-C is the normal way to stop
        asyncio.run(forever)
