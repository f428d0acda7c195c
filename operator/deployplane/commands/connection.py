"""How a CLI command reaches the API: connection options, the client factory, exit codes.

Every command takes the same `--url/--api-key/--tenant-id` options (also read from the
environment, like the operator) and runs its API calls through `call()`, which turns
any failure into exactly one line on stderr and a documented exit code, never a
traceback. `make_client` is looked up at call time so tests can swap in a client over
`httpx.MockTransport`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from enum import IntEnum
from typing import Annotated, NoReturn, TypeVar

import httpx
import typer
from rich.console import Console

from deployplane.api.client import ControlPlaneClient
from deployplane.api.errors import ControlPlaneError

__all__ = [
    "EXIT_CODES_HELP",
    "ApiKeyOption",
    "Connection",
    "ExitCode",
    "TenantOption",
    "UrlOption",
    "call",
    "fail",
    "make_client",
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

UrlOption = Annotated[
    str | None,
    typer.Option(
        "--url",
        envvar="DEPLOYPLANE_CONTROL_PLANE_URL",
        help="Base URL of the control plane.",
        show_default=False,
    ),
]
ApiKeyOption = Annotated[
    str | None,
    typer.Option(
        "--api-key",
        envvar="DEPLOYPLANE_API_KEY",
        help="API key, sent as X-Api-Key (prefer the environment variable).",
        show_default=False,
    ),
]
TenantOption = Annotated[
    str | None,
    typer.Option(
        "--tenant-id",
        envvar="DEPLOYPLANE_TENANT_ID",
        help="Workspace (tenant) id, sent as X-Tenant-Id.",
        show_default=False,
    ),
]


class Connection:
    """The connection options of one command invocation."""

    def __init__(self, url: str | None, api_key: str | None, tenant_id: str | None) -> None:
        self.url = url
        self.api_key = api_key
        self.tenant_id = tenant_id

    def __repr__(self) -> str:  # never show the key
        return f"Connection(url={self.url!r}, tenant_id={self.tenant_id!r})"


_stderr = Console(stderr=True, highlight=False, soft_wrap=True)


def fail(message: str, code: ExitCode) -> NoReturn:
    """Print one `error: ...` line on stderr and exit with `code`."""
    one_line = " ".join(message.split())
    _stderr.print(f"error: {one_line}", markup=False)
    raise typer.Exit(int(code))


def make_client(url: str, *, api_key: str | None, tenant_id: str | None) -> ControlPlaneClient:
    """Build the client a command uses. Tests replace this function."""
    return ControlPlaneClient(url, api_key=api_key, tenant_id=tenant_id)


def _checked_url(url: str) -> str:
    # A malformed URL is the user's typo: a usage error, not a failed API call.
    try:
        parsed = httpx.URL(url)
    except httpx.InvalidURL as exc:
        fail(f"invalid control-plane URL {url!r}: {exc}", ExitCode.USAGE)
    if parsed.scheme not in ("http", "https") or not parsed.host:
        fail(f"invalid control-plane URL {url!r}: expected http(s)://host[:port]", ExitCode.USAGE)
    return url


def call(conn: Connection, action: Callable[[ControlPlaneClient], Awaitable[T]]) -> T:
    """Run `action` with a fresh client; map every failure to one line and an exit code."""
    if not conn.url:
        fail(
            "no control-plane URL: pass --url or set DEPLOYPLANE_CONTROL_PLANE_URL",
            ExitCode.USAGE,
        )
    url = _checked_url(conn.url)

    async def main() -> T:
        # A module global resolved at call time, so a test's replacement takes effect.
        async with make_client(url, api_key=conn.api_key, tenant_id=conn.tenant_id) as client:
            return await action(client)

    try:
        return asyncio.run(main())
    except ControlPlaneError as exc:
        fail(str(exc), ExitCode.API_ERROR)
    except TimeoutError as exc:
        fail(str(exc) or "timed out", ExitCode.TIMED_OUT)
    except typer.Exit:
        raise
    except Exception as exc:  # the one-line promise holds even for a bug of ours
        fail(f"unexpected {type(exc).__name__}: {exc}", ExitCode.API_ERROR)
