"""A leaner answer to httpcore's "is this pooled connection still usable?" check.

Each time httpcore's pool assigns a request or takes a response back, it asks every idle
connection whether its socket is readable (a server that closed it). Through anyio that
question rebuilds the stream's whole attribute table, with a `getpeername()` system call,
only to reach the raw socket, a share of the operator's CPU that a py-spy profile of the
1,000-resource converge shows (docs/benchmarks.md, "Profiling"). `LeanNetworkBackend`
wraps the backend httpcore would use and keeps each stream's raw socket, so the check is
one `poll()` as httpcore meant it. Everything else passes through unchanged.

`LeanTransport` is how the control-plane client gets it, through public surfaces only:
httpx takes any `AsyncBaseTransport`, and httpcore's `AsyncConnectionPool` takes a
`network_backend`. It is what `httpx.AsyncHTTPTransport` does without a proxy (the
request and response handed between the two libraries, httpcore's errors raised as
httpx's), which offers no way to choose the backend.
"""

from __future__ import annotations

import contextlib
import select
from collections.abc import AsyncIterable, AsyncIterator, Iterable, Iterator
from typing import Any, Protocol

import httpcore
import httpx

__all__ = ["LeanNetworkBackend", "LeanNetworkStream", "LeanTransport", "socket_readable"]


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


# httpcore's errors -> httpx's, the most specific first (httpx's own mapping, which is
# private to its transport).
_ERRORS: tuple[tuple[type[Exception], type[httpx.TransportError]], ...] = (
    (httpcore.ConnectTimeout, httpx.ConnectTimeout),
    (httpcore.ReadTimeout, httpx.ReadTimeout),
    (httpcore.WriteTimeout, httpx.WriteTimeout),
    (httpcore.PoolTimeout, httpx.PoolTimeout),
    (httpcore.TimeoutException, httpx.TimeoutException),
    (httpcore.ConnectError, httpx.ConnectError),
    (httpcore.ReadError, httpx.ReadError),
    (httpcore.WriteError, httpx.WriteError),
    (httpcore.NetworkError, httpx.NetworkError),
    (httpcore.ProxyError, httpx.ProxyError),
    (httpcore.UnsupportedProtocol, httpx.UnsupportedProtocol),
    (httpcore.LocalProtocolError, httpx.LocalProtocolError),
    (httpcore.RemoteProtocolError, httpx.RemoteProtocolError),
    (httpcore.ProtocolError, httpx.ProtocolError),
)


@contextlib.contextmanager
def httpx_errors() -> Iterator[None]:
    """Raise an httpcore error as the httpx error it stands for (the retry policy,
    `deployplane.api.transport`, tells them apart)."""
    try:
        yield
    except Exception as exc:
        for theirs, ours in _ERRORS:
            if isinstance(exc, theirs):
                raise ours(str(exc)) from exc
        raise


class _ResponseStream(httpx.AsyncByteStream):
    """httpcore's response body as httpx reads it, its errors raised as httpx's."""

    def __init__(self, inner: AsyncIterable[bytes]) -> None:
        self._inner = inner

    async def __aiter__(self) -> AsyncIterator[bytes]:
        with httpx_errors():
            async for part in self._inner:
                yield part

    async def aclose(self) -> None:
        close = getattr(self._inner, "aclose", None)
        if close is not None:
            await close()


class LeanTransport(httpx.AsyncBaseTransport):
    """httpx's default transport (HTTP/1.1, verified TLS, `limits`) over an httpcore
    pool whose streams are `LeanNetworkStream`s."""

    def __init__(
        self,
        limits: httpx.Limits,
        backend: httpcore.AsyncNetworkBackend | None = None,
        *,
        tls: bool = True,
    ) -> None:
        """`backend`: the one whose streams are wrapped (anyio's, as httpcore's own
        choice on asyncio). `tls`: whether requests go to https URLs, verified as httpx
        verifies them (its CA bundle, or `SSL_CERT_FILE`/`SSL_CERT_DIR`). Without it no
        TLS context is made: loading the CA bundle costs about 30 ms of CPU, a tenth of
        a short CLI command. Should a connection start TLS all the same, httpcore
        verifies it with its own default context (the same CA bundle)."""
        self.pool = httpcore.AsyncConnectionPool(
            ssl_context=httpx.create_ssl_context() if tls else None,
            max_connections=limits.max_connections,
            max_keepalive_connections=limits.max_keepalive_connections,
            keepalive_expiry=limits.keepalive_expiry,
            network_backend=LeanNetworkBackend(backend or httpcore.AnyIOBackend()),
        )

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        assert isinstance(request.stream, httpx.AsyncByteStream)
        sent = httpcore.Request(
            method=request.method,
            url=httpcore.URL(
                scheme=request.url.raw_scheme,
                host=request.url.raw_host,
                port=request.url.port,
                target=request.url.raw_path,
            ),
            headers=request.headers.raw,
            content=request.stream,
            extensions=request.extensions,
        )
        with httpx_errors():
            answer = await self.pool.handle_async_request(sent)
        assert isinstance(answer.stream, AsyncIterable)
        return httpx.Response(
            status_code=answer.status,
            headers=answer.headers,
            stream=_ResponseStream(answer.stream),
            extensions=answer.extensions,
        )

    async def aclose(self) -> None:
        await self.pool.aclose()
