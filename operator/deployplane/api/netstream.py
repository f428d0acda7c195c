"""A leaner answer to httpcore's "is this pooled connection still usable?" check.

Each time httpcore's pool assigns a request or takes a response back, it asks every idle
connection whether its socket is readable (a server that closed it). Through anyio that
question rebuilds the stream's whole attribute table, with a `getpeername()` system call,
only to reach the raw socket: in the 1,000-resource converge (py-spy, bench/) those
checks were ~5% of the operator's CPU. `LeanNetworkBackend` wraps the backend httpcore
would use and keeps each stream's raw socket, so the check is one `poll()` as httpcore
meant it. Everything else passes through unchanged.
"""

from __future__ import annotations

import select
from collections.abc import Iterable
from typing import Any, Protocol

import httpcore

__all__ = ["LeanNetworkBackend", "LeanNetworkStream", "install", "socket_readable"]


class HasFileno(Protocol):
    """A socket, or asyncio's `TransportSocket` view of one (what anyio hands out)."""

    def fileno(self) -> int: ...


def socket_readable(sock: HasFileno | None) -> bool:
    """True when `sock` has data or an end-of-file waiting (or is gone): an idle
    HTTP/1.1 connection in that state was closed by the server. httpcore's own test."""
    if sock is None or sock.fileno() == -1:
        return True
    poller = select.poll()
    poller.register(sock.fileno(), select.POLLIN)
    return bool(poller.poll(0))


# The `timeout` parameters below are httpcore's interface (ASYNC109 excused).


class LeanNetworkStream(httpcore.AsyncNetworkStream):
    """A stream that answers `is_readable` from the raw socket it keeps."""

    def __init__(self, inner: httpcore.AsyncNetworkStream) -> None:
        self._inner = inner
        sock = inner.get_extra_info("socket")
        self._socket: HasFileno | None = sock if callable(getattr(sock, "fileno", None)) else None

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:  # noqa: ASYNC109
        return await self._inner.read(max_bytes, timeout)

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:  # noqa: ASYNC109
        await self._inner.write(buffer, timeout)

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def start_tls(self, *args: Any, **kwargs: Any) -> httpcore.AsyncNetworkStream:
        return LeanNetworkStream(await self._inner.start_tls(*args, **kwargs))

    def get_extra_info(self, info: str) -> Any:
        if info == "is_readable" and self._socket is not None:
            return socket_readable(self._socket)
        return self._inner.get_extra_info(info)


class LeanNetworkBackend(httpcore.AsyncNetworkBackend):
    """httpcore's backend, its streams wrapped in `LeanNetworkStream`."""

    def __init__(self, inner: httpcore.AsyncNetworkBackend) -> None:
        self._inner = inner

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,  # noqa: ASYNC109
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        stream = await self._inner.connect_tcp(
            host, port, timeout=timeout, local_address=local_address, socket_options=socket_options
        )
        return LeanNetworkStream(stream)

    async def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,  # noqa: ASYNC109
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        stream = await self._inner.connect_unix_socket(
            path, timeout=timeout, socket_options=socket_options
        )
        return LeanNetworkStream(stream)

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)


def install(client: Any) -> bool:
    """Wrap the network backend of `client`'s (an `httpx.AsyncClient`) default pool;
    False, changing nothing, when the client has another transport (a test's mock, an
    in-process app) or httpx/httpcore are laid out otherwise."""
    pool = getattr(getattr(client, "_transport", None), "_pool", None)
    if not isinstance(pool, httpcore.AsyncConnectionPool):
        return False
    inner = getattr(pool, "_network_backend", None)
    if not isinstance(inner, httpcore.AsyncNetworkBackend):
        return False
    if not isinstance(inner, LeanNetworkBackend):
        pool._network_backend = LeanNetworkBackend(inner)
    return True
