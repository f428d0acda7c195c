"""`deployplane.api.netstream`: the pooled-connection check from a kept raw socket, a
real keep-alive server round trip through the wrapped backend, and the transport that
plugs it into httpx (httpcore's errors raised as httpx's)."""

from __future__ import annotations

import asyncio
import socket
from asyncio.trsock import TransportSocket
from typing import Any

import httpcore
import httpx
import pytest

from deployplane.api import netstream
from deployplane.api.transport import ApiTransport


class FakeStream(httpcore.AsyncNetworkStream):
    def __init__(self, sock: socket.socket | None) -> None:
        self.sock = sock
        self.asked: list[str] = []

    def get_extra_info(self, info: str) -> Any:
        self.asked.append(info)
        return self.sock if info == "socket" else f"inner:{info}"


def test_idle_open_socket_is_not_readable_and_a_closed_peer_is() -> None:
    ours, peer = socket.socketpair()
    with ours, peer:
        stream = netstream.LeanNetworkStream(FakeStream(ours))
        assert stream.get_extra_info("is_readable") is False
        peer.close()  # the server closed the idle connection: EOF is readable
        assert stream.get_extra_info("is_readable") is True


def test_readable_is_answered_from_the_kept_socket_and_other_info_passes_through() -> None:
    ours, peer = socket.socketpair()
    with ours, peer:
        inner = FakeStream(ours)
        stream = netstream.LeanNetworkStream(inner)
        peer.sendall(b"x")
        assert stream.get_extra_info("is_readable") is True
        assert stream.get_extra_info("server_addr") == "inner:server_addr"
        assert inner.asked == ["socket", "server_addr"]  # never "is_readable"


def test_asyncios_transport_socket_view_is_kept_too() -> None:
    """anyio on asyncio hands out `TransportSocket`, not `socket.socket`."""
    ours, peer = socket.socketpair()
    with ours, peer:
        inner = FakeStream(TransportSocket(ours))  # type: ignore[arg-type]
        stream = netstream.LeanNetworkStream(inner)
        assert stream.get_extra_info("is_readable") is False
        peer.close()
        assert stream.get_extra_info("is_readable") is True
        assert inner.asked == ["socket"]


class RecordingBackend(httpcore.AnyIOBackend):
    """anyio's backend, its streams recording what they are asked."""

    def __init__(self) -> None:
        self.streams: list[Recording] = []

    async def connect_tcp(self, *args: Any, **kwargs: Any) -> httpcore.AsyncNetworkStream:
        stream = await super().connect_tcp(*args, **kwargs)
        recording = Recording(stream)
        self.streams.append(recording)
        return recording


class Recording(httpcore.AsyncNetworkStream):
    def __init__(self, inner: httpcore.AsyncNetworkStream) -> None:
        self.inner = inner
        self.asked: list[str] = []

    def get_extra_info(self, info: str) -> Any:
        self.asked.append(info)
        return self.inner.get_extra_info(info)

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:  # noqa: ASYNC109
        return await self.inner.read(max_bytes, timeout)

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:  # noqa: ASYNC109
        await self.inner.write(buffer, timeout)

    async def aclose(self) -> None:
        await self.inner.aclose()


async def test_a_real_pooled_connection_is_checked_by_poll_on_its_kept_socket(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """httpcore asks the idle connection whether it is readable before reusing it: the
    answer comes from the kept socket, never from anyio's attribute table."""
    polled: list[object] = []
    real = netstream.socket_readable
    monkeypatch.setattr(netstream, "socket_readable", lambda s: polled.append(s) or real(s))
    counts = {"connections": 0, "requests": 0}
    server = await _serve(counts)
    port = server.sockets[0].getsockname()[1]
    backend = RecordingBackend()
    transport = netstream.LeanTransport(httpx.Limits(max_connections=4), backend)
    async with server, httpx.AsyncClient(transport=transport) as http:
        for _ in range(2):
            assert (await http.get(f"http://127.0.0.1:{port}/x")).json() == {"ok": True}
    [stream] = backend.streams
    assert counts["connections"] == 1
    assert polled
    assert "is_readable" not in stream.asked


async def test_the_client_transport_is_lean_unless_one_is_given(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    made: list[netstream.LeanTransport] = []

    class Seen(netstream.LeanTransport):
        def __init__(self, limits: httpx.Limits, **options: Any) -> None:
            super().__init__(limits, **options)
            made.append(self)

    monkeypatch.setattr("deployplane.api.transport.LeanTransport", Seen)
    async with ApiTransport("http://127.0.0.1:1", max_in_flight=3):
        [transport] = made
        assert isinstance(transport.pool, httpcore.AsyncConnectionPool)
    mocked = httpx.MockTransport(lambda r: httpx.Response(200))
    async with ApiTransport("http://127.0.0.1:1", transport=mocked):
        assert len(made) == 1


async def test_httpcore_errors_reach_the_caller_as_httpx_errors() -> None:
    """The retry policy tells httpx's errors apart (connect: surely not sent)."""
    transport = netstream.LeanTransport(httpx.Limits())
    async with httpx.AsyncClient(transport=transport, timeout=0.5) as http:
        # A port bound but not listening refuses connections, and stays ours meanwhile
        # (a port closed again could be taken by another process before the request).
        with socket.socket() as closed:
            closed.bind(("127.0.0.1", 0))
            with pytest.raises(httpx.ConnectError):
                await http.get(f"http://127.0.0.1:{closed.getsockname()[1]}/")

        async def truncated(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await reader.readuntil(b"\r\n\r\n")
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nshort")
            await writer.drain()
            writer.close()

        async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await reader.readuntil(b"\r\n\r\n")
            await asyncio.sleep(5)

        for handler, error in ((truncated, httpx.RemoteProtocolError), (silent, httpx.ReadTimeout)):
            server = await asyncio.start_server(handler, "127.0.0.1", 0)
            async with server:
                url = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/"
                with pytest.raises(error):
                    await http.get(url)
                server.close()


def test_a_stream_without_a_socket_asks_the_inner_one() -> None:
    inner = FakeStream(None)
    assert netstream.LeanNetworkStream(inner).get_extra_info("is_readable") == "inner:is_readable"


def test_socket_readable_treats_a_missing_or_closed_socket_as_gone() -> None:
    assert netstream.socket_readable(None) is True
    sock = socket.socket()
    sock.close()
    assert netstream.socket_readable(sock) is True


async def _serve(counts: dict[str, int]) -> asyncio.Server:
    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        counts["connections"] += 1
        while await reader.readuntil(b"\r\n\r\n"):
            body = b'{"ok": true}'
            head = f"HTTP/1.1 200 OK\r\nContent-Length: {len(body)}\r\n\r\n".encode()
            writer.write(head + body)
            await writer.drain()
            counts["requests"] += 1
            if counts["requests"] == 2:  # the server drops the idle connection
                writer.close()
                return

    return await asyncio.start_server(handle, "127.0.0.1", 0)


async def test_keep_alive_reuse_and_a_server_closed_connection_through_the_wrapper() -> None:
    counts = {"connections": 0, "requests": 0}
    server = await _serve(counts)
    port = server.sockets[0].getsockname()[1]
    async with server, ApiTransport(f"http://127.0.0.1:{port}", max_retries=0) as api:
        for _ in range(2):
            assert (await api._request("GET", "/x")).json() == {"ok": True}
        assert counts["connections"] == 1  # kept alive
        await asyncio.sleep(0.05)  # the close reaches us
        # The pool sees the closed idle connection as readable and opens a new one
        # instead of failing the request on it.
        assert (await api._request("GET", "/x")).json() == {"ok": True}
        assert counts["connections"] == 2


async def test_only_an_https_control_plane_gets_a_tls_context(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Loading the CA bundle is most of a short command's network set-up: an http://
    control plane never needs it."""
    made: list[object] = []
    real = httpx.create_ssl_context
    monkeypatch.setattr(netstream.httpx, "create_ssl_context", lambda: made.append(1) or real())
    async with ApiTransport("http://127.0.0.1:1"):
        assert made == []
    async with ApiTransport("HTTPS://control-plane.example"):
        assert made == [1]
