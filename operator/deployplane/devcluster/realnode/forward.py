"""The node's way to the apiserver: a TCP forwarder listening inside the node.

`python -m deployplane.devcluster.realnode.forward PID ADDRESS PORT TARGET_PORT` opens
its listening socket on ADDRESS:PORT inside the network namespace of process PID (the
node's holder), then returns to the host's namespace, where it connects each client to
127.0.0.1:TARGET_PORT (the apiserver). So the apiserver keeps listening on the host's
127.0.0.1 only, and the listener exists only inside the node: the node's daemons and
its pods (through the `kubernetes` Service) reach it, nothing on the host's network
does.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import os
import socket
import sys

_CLONE_NEWNET = 0x40000000


def _setns(fd: int) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.setns(fd, _CLONE_NEWNET) != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))


def listen_in(pid: int, address: str, port: int) -> socket.socket:
    """A listening socket on address:port in the network namespace of `pid`."""
    host = os.open("/proc/self/ns/net", os.O_RDONLY)
    node = os.open(f"/proc/{pid}/ns/net", os.O_RDONLY)
    try:
        _setns(node)
        try:
            return socket.create_server((address, port), backlog=128)
        finally:
            _setns(host)
    finally:
        os.close(host)
        os.close(node)


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except (ConnectionError, OSError):
        pass
    finally:
        with contextlib.suppress(ConnectionError, OSError):
            writer.close()


async def _serve(sock: socket.socket, target_port: int) -> None:
    async def relay(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", target_port)
        except OSError:
            writer.close()
            return
        await asyncio.gather(_pipe(reader, up_writer), _pipe(up_reader, writer))

    server = await asyncio.start_server(relay, sock=sock)
    async with server:
        await server.serve_forever()


def main(argv: list[str]) -> int:
    pid, address, port, target = int(argv[0]), argv[1], int(argv[2]), int(argv[3])
    sock = listen_in(pid, address, port)
    asyncio.run(_serve(sock, target))
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main(sys.argv[1:]))
