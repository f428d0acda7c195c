"""Throughput and latency of the control-plane emulator on its SQLite default.

Starts `deployplane controlplane serve --port 0` (uvicorn, 127.0.0.1, a fresh SQLite
file) in a subprocess, so the load generator does not share the server's event loop,
then drives it for a bounded time per operation and prints requests/s, p50/p99
latency and the server's CPU time per request for GET /v2/deployments/{id} and
POST /v2/deployments (and GET /healthz as the HTTP stack's floor).

    .venv/bin/python -P bench/controlplane.py [--seconds 5] [--concurrency 16]
                                              [--driver httpx|raw]

(-P: bench/ holds operator.py, which would otherwise shadow the standard library
module of that name.)

Drivers: `httpx` (default) is the client real users have; on a small machine it
costs more CPU per request than the server, so it measures itself. `raw` speaks
minimal HTTP/1.1 over keep-alive sockets (like wrk), so the server is what saturates.
Server CPU per request is read from /proc and does not depend on the driver.

Targets (single process): >= 1000 GET/s, >= 300 POST/s, p99 <= 50 ms.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from urllib.parse import urlsplit

import httpx

API_KEY = "bench-key"
LISTENING = "deployplane control plane listening on "

# One request of an operation: (method, path, JSON body or None) for the index-th call.
Operation = Callable[[int], tuple[str, str, bytes | None]]
# Sends one request on a worker's own connection; returns the status code.
Send = Callable[[str, str, bytes | None], Awaitable[int]]


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process (Linux): unlike wall-clock throughput, it
    does not depend on the load generator or on what else the machine runs."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def start_server(workdir: Path) -> tuple[subprocess.Popen[str], str]:
    database = f"sqlite+aiosqlite:///{workdir / 'controlplane.db'}"
    command = [sys.executable, "-m", "deployplane.cli", "controlplane", "serve"]
    command += ["--host", "127.0.0.1", "--port", "0", "--database", database]
    command += ["--api-key", API_KEY]
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"}
    )
    assert process.stdout is not None
    for line in process.stdout:
        if line.startswith(LISTENING):
            return process, line[len(LISTENING) :].strip()
    process.wait()
    raise SystemExit(f"server exited with {process.returncode} before listening")


class RawConnection:
    """Minimal HTTP/1.1 keep-alive client: enough for this server's answers."""

    def __init__(self, host: str, port: int) -> None:
        self.host, self.port = host, port
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def send(self, method: str, path: str, body: bytes | None) -> int:
        if self.writer is None:
            self.reader, self.writer = await asyncio.open_connection(self.host, self.port)
        assert self.reader is not None
        head = f"{method} {path} HTTP/1.1\r\nHost: {self.host}\r\nX-Api-Key: {API_KEY}\r\n"
        if body is not None:
            head += f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
        self.writer.write(head.encode() + b"\r\n" + (body or b""))
        status_line = await self.reader.readline()
        length = 0
        while (line := await self.reader.readline()) not in (b"\r\n", b""):
            name, _, value = line.partition(b":")
            if name.lower() == b"content-length":
                length = int(value)
        await self.reader.readexactly(length)
        return int(status_line.split()[1])

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()


async def drive(
    name: str,
    operation: Operation,
    *,
    senders: list[Send],
    seconds: float,
    expected: int,
    server_pid: int,
) -> tuple[float, float, float]:
    latencies: list[float] = []
    failures = 0
    counter = itertools.count()
    deadline = time.perf_counter() + seconds

    async def worker(send: Send) -> None:
        nonlocal failures
        while time.perf_counter() < deadline:
            method, path, body = operation(next(counter))
            started = time.perf_counter()
            status = await send(method, path, body)
            latencies.append(time.perf_counter() - started)
            if status != expected:
                failures += 1

    began, cpu_before = time.perf_counter(), cpu_seconds(server_pid)
    await asyncio.gather(*(worker(send) for send in senders))
    elapsed = time.perf_counter() - began
    cpu_per_request = (cpu_seconds(server_pid) - cpu_before) / max(1, len(latencies))
    rate = len(latencies) / elapsed
    quantiles = statistics.quantiles(latencies, n=100)
    p50, p99 = quantiles[49] * 1000, quantiles[98] * 1000
    capacity = 1 / cpu_per_request if cpu_per_request else float("inf")
    print(
        f"{name:<26} {rate:7.0f} req/s  p50 {p50:6.1f} ms  p99 {p99:6.1f} ms"
        f"  server CPU {cpu_per_request * 1000:5.2f} ms/req (= {capacity:5.0f}/s per core)"
        f"  [{len(latencies)} requests, {failures} unexpected]",
        flush=True,
    )
    return rate, p50, p99


async def run(
    base_url: str, *, seconds: float, concurrency: int, driver: str, server_pid: int
) -> None:
    prefix = uuid.uuid4().hex[:8]

    def create_body(index: int) -> bytes:
        return json.dumps(
            {
                "name": f"bench-{prefix}-{index}",
                "source": "external_docker",
                # "v" first: a tag may not start with "-" (the seed is index -1)
                "source_revision_config": {"image_uri": f"registry.example.com/app:v{index}"},
                "secrets": [{"name": "TOKEN", "value": "not-a-real-secret"}],
            }
        ).encode()

    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    async with httpx.AsyncClient(
        base_url=base_url, headers={"X-Api-Key": API_KEY}, limits=limits, timeout=30
    ) as client:
        seed = await client.post(
            "/v2/deployments", content=create_body(-1), headers={"Content-Type": "application/json"}
        )
        seed.raise_for_status()
        deployment_id = seed.json()["id"]

        raw: list[RawConnection] = []
        if driver == "raw":
            url = urlsplit(base_url)
            assert url.hostname is not None
            assert url.port is not None
            raw = [RawConnection(url.hostname, url.port) for _ in range(concurrency)]
            senders: list[Send] = [connection.send for connection in raw]
        else:

            async def send_httpx(method: str, path: str, body: bytes | None) -> int:
                headers = {"Content-Type": "application/json"} if body is not None else None
                response = await client.request(method, path, content=body, headers=headers)
                return response.status_code

            senders = [send_httpx] * concurrency

        for send in senders:  # open and warm up every connection
            await send("GET", f"/v2/deployments/{deployment_id}", None)

        print(f"driver {driver}, concurrency {concurrency}, {seconds:g} s each", flush=True)

        async def phase(name: str, operation: Operation, expected: int) -> None:
            await drive(
                name,
                operation,
                senders=senders,
                seconds=seconds,
                expected=expected,
                server_pid=server_pid,
            )

        # The HTTP stack's floor (no auth, no database), to read the others against.
        await phase("GET /healthz (floor)", lambda _: ("GET", "/healthz", None), 200)
        get_path = f"/v2/deployments/{deployment_id}"
        await phase("GET /v2/deployments/{id}", lambda _: ("GET", get_path, None), 200)
        await phase(
            "POST /v2/deployments",
            lambda index: ("POST", "/v2/deployments", create_body(index)),
            201,
        )
        for connection in raw:
            connection.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--driver", choices=["httpx", "raw"], default="httpx")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as workdir:
        process, base_url = start_server(Path(workdir))
        try:
            asyncio.run(
                run(
                    base_url,
                    seconds=args.seconds,
                    concurrency=args.concurrency,
                    driver=args.driver,
                    server_pid=process.pid,
                )
            )
        finally:
            process.terminate()
            process.wait(timeout=10)


if __name__ == "__main__":
    main()
