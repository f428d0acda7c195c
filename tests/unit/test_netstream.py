"""`deployplane.api.netstream`: the pooled-connection check from a kept raw socket, and a
real keep-alive server round trip through the wrapped backend."""

from __future__ import annotations

import asyncio
import socket
from asyncio.trsock import TransportSocket
from typing import Any

import httpcore
import httpx

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


async def test_a_real_pooled_connection_keeps_its_socket() -> None:
    counts = {"connections": 0, "requests": 0}
    server = await _serve(counts)
    port = server.sockets[0].getsockname()[1]
    async with server, ApiTransport(f"http://127.0.0.1:{port}", max_retries=0) as api:
        await api._request("GET", "/x")
        pool = api._http._transport._pool  # type: ignore[attr-defined]
        [connection] = pool.connections
        stream = connection._connection._network_stream
        assert isinstance(stream, netstream.LeanNetworkStream)
        assert stream._socket is not None  # answered by poll(), not anyio's attributes


def test_a_stream_without_a_socket_asks_the_inner_one() -> None:
    inner = FakeStream(None)
    assert netstream.LeanNetworkStream(inner).get_extra_info("is_readable") == "inner:is_readable"


def test_socket_readable_treats_a_missing_or_closed_socket_as_gone() -> None:
    assert netstream.socket_readable(None) is True
    sock = socket.socket()
    sock.close()
    assert netstream.socket_readable(sock) is True


async def test_the_transport_installs_it_on_its_default_pool_only() -> None:
    async with ApiTransport("http://127.0.0.1:1") as api:
        pool = api._http._transport._pool  # type: ignore[attr-defined]
        assert isinstance(pool._network_backend, netstream.LeanNetworkBackend)
        assert netstream.install(api._http)  # twice: not wrapped again
        assert not isinstance(pool._network_backend._inner, netstream.LeanNetworkBackend)
    mocked = httpx.AsyncClient(transport=httpx.MockTransport(lambda r: httpx.Response(200)))
    async with mocked:
        assert netstream.install(mocked) is False


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
