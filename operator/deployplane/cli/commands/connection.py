"""How a CLI command reaches the API: connection options, the client, exit codes.

The connection options `--url/--api-key/--tenant-id/--context` (also read from the
environment, like the operator) are defined once (`CONNECTION_PARAMS`), on every command
group (whose callback, `read_connection`, keeps them), and each command accepts the very
same options again after its name (`ConnectedCommand`), so both `deployplane deployments
--url U list` and `deployplane deployments list --url U` work; what is given after the
command wins.
Either way they fill one `ConnectionOptions` in the click context, which `call()` turns
into a `ConnectionSettings` (`deployplane.api.connection`) when a command first needs the
API. `call()` turns any failure into exactly one line on stderr and a documented exit
code, never a traceback. `make_client` is looked up at call time so tests can give the
client a transport over `httpx.MockTransport`.

Every command's declaration imports this module, so it imports click and nothing heavy:
the client, its models and asyncio are imported by `call()`, when a command runs.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from enum import IntEnum
from typing import TYPE_CHECKING, Any, Final, NoReturn, TypeVar

import click

from deployplane.api.env import ENV_API_KEY, ENV_TENANT_ID, ENV_URL
from deployplane.cli.clientconfig.options import ENV_CONTEXT, ConfigError, ConnectionOptions
from deployplane.cli.commands.completers import context_names
from deployplane.cli.helptext import Command
from deployplane.cli.params import Option

if TYPE_CHECKING:
    from deployplane.api.client import ControlPlaneClient
    from deployplane.api.connection import ConnectionSettings

__all__ = [
    "CONNECTION_PARAMS",
    "EXIT_CODES_HELP",
    "ConnectedCommand",
    "ConnectionOptions",
    "ExitCode",
    "UsageError",
    "call",
    "connection_settings",
    "current_options",
    "current_settings",
    "error_boundary",
    "fail",
    "has_url",
    "make_client",
    "read_connection",
]

T = TypeVar("T")


class ExitCode(IntEnum):
    """Process exit codes of every API command."""

    OK = 0
    API_ERROR = 1
    USAGE = 2
    REVISION_FAILED = 3
    TIMED_OUT = 4


EXIT_CODES_HELP = (
    "Exit codes: 0 ok; 1 API or connection error; 2 usage error or bad input file; "
    "3 revision ended without deploying; 4 timed out."
)

_OPTION_NAMES = ("url", "api_key", "tenant_id", "context")


class UsageError(Exception):
    """Bad input found by the CLI itself (a file, a config): one line, exit 2."""


def _connection_option(flag: str, envvar: str, help: str, **attrs: Any) -> click.Option:
    return Option([flag], envvar=envvar, help=help, show_default=False, **attrs)


CONNECTION_PARAMS: Final = (
    _connection_option("--url", ENV_URL, "Base URL of the control plane."),
    _connection_option(
        "--api-key",
        ENV_API_KEY,
        f"API key, sent as X-Api-Key. Prefer {ENV_API_KEY} or a context: the command line "
        "shows in ps and shell history.",
    ),
    _connection_option("--tenant-id", ENV_TENANT_ID, "Workspace (tenant) id, sent as X-Tenant-Id."),
    _connection_option(
        "--context",
        ENV_CONTEXT,
        "Named context of the config file (deployplane config get-contexts); flags and "
        "DEPLOYPLANE_* variables win over its values.",
        shell_complete=context_names,
    ),
)
"""The connection options, the one definition: on every API command group, and again on
each of its commands. A click option holds no state of its own (values go to each
invocation's context), so every command shares them."""


@click.pass_context
def read_connection(
    ctx: click.Context,
    url: str | None,
    api_key: str | None,
    tenant_id: str | None,
    context: str | None,
) -> None:
    """The callback of every API command group: its connection options, for its command."""
    ctx.obj = ConnectionOptions(url, api_key, tenant_id, context)


# The options of the command being run, for `call()`: set by `ConnectedCommand` around
# the command function (click's own current context is the innermost one, and `call()`
# may be reached from a helper that has none at hand).
_current: ContextVar[ConnectionOptions | None] = ContextVar("connection", default=None)


class ConnectedCommand(Command):
    """A command that takes the connection options too and hands them to its group's
    `ConnectionOptions` rather than to the command function."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.params = [*self.params, *CONNECTION_PARAMS]

    def invoke(self, ctx: click.Context) -> Any:
        options = ctx.ensure_object(ConnectionOptions)
        for name in _OPTION_NAMES:
            value = ctx.params.pop(name)
            # Given after the command: it wins. From the environment: only where the
            # group has nothing (the group read the same variables).
            source = ctx.get_parameter_source(name)
            given = source is not None and source.name == "COMMANDLINE"
            if value is not None and (given or getattr(options, name) is None):
                setattr(options, name, value)
        token = _current.set(options)
        try:
            return super().invoke(ctx)
        finally:
            _current.reset(token)


def fail(message: str, code: ExitCode) -> NoReturn:
    """Print one `error: ...` line on stderr and exit with `code`."""
    one_line = " ".join(message.split())
    click.echo(f"error: {one_line}", err=True)
    raise click.exceptions.Exit(int(code))


def make_client(settings: ConnectionSettings) -> ControlPlaneClient:
    """The client a command uses. Tests replace this function (to pass a transport)."""
    return settings.client()


def connection_settings(options: ConnectionOptions | None) -> ConnectionSettings:
    """The invocation's connection (`deployplane.cli.clientconfig.resolve`), or a usage error
    naming what is missing or wrong, before any request."""
    from deployplane.cli.clientconfig.resolve import resolve_connection

    try:
        return resolve_connection(options)
    except ConfigError as exc:
        fail(str(exc), ExitCode.USAGE)


def has_url() -> bool:
    """Whether the command being run was given a control-plane URL (flag, variable or
    context), for a command that carries on without one (`trace`)."""
    from deployplane.cli.clientconfig.resolve import url_given

    return url_given(_current.get())


def current_options() -> ConnectionOptions | None:
    """The connection options of the command being run, as given (for a command that
    resolves them itself: `plan`, whose every failure exits 1)."""
    return _current.get()


def current_settings() -> ConnectionSettings:
    """The connection of the command being run (exits 2 if incomplete)."""
    return connection_settings(_current.get())


@contextmanager
def error_boundary(url: str | None = None) -> Iterator[None]:
    """The one error boundary of every command: any failure inside is one line on stderr
    and a documented exit code, never a traceback. `url`: where requests went, named when
    the control plane did not answer."""
    from deployplane.api.errors import ControlPlaneError

    try:
        yield
    except click.exceptions.Exit:  # a RuntimeError: let the exits we chose through
        raise
    except (UsageError, ConfigError) as exc:
        fail(str(exc), ExitCode.USAGE)
    except ControlPlaneError as exc:
        message = str(exc)
        if exc.status_code is None and exc.method and url:  # no answer: say where it went
            message += f" (control plane at {url})"
        fail(message, ExitCode.API_ERROR)
    except TimeoutError as exc:
        fail(str(exc) or "timed out", ExitCode.TIMED_OUT)
    except Exception as exc:  # the one-line promise holds even for a bug of ours
        fail(f"unexpected {type(exc).__name__}: {exc}", ExitCode.API_ERROR)


def call(action: Callable[[ControlPlaneClient], Awaitable[T]]) -> T:
    """Run `action` with a fresh client on the invocation's connection; map every
    failure to one line and an exit code."""
    import asyncio

    settings = connection_settings(_current.get())

    async def main() -> T:
        # A module global resolved at call time, so a test's replacement takes effect.
        async with make_client(settings) as client:
            return await action(client)

    with error_boundary(settings.url):
        return asyncio.run(main())
    raise AssertionError("unreachable: the boundary returns or exits")  # for mypy
