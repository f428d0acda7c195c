"""Throughput and latency of the control-plane emulator on its SQLite default.

Starts `deployplane controlplane serve --port 0` (uvicorn, 127.0.0.1, a fresh SQLite
file) in a subprocess, so the load generator does not share the server's event loop,
then drives it with httpx for a bounded time per operation and prints requests/s and
p50/p99 latency for GET /v2/deployments/{id} and POST /v2/deployments.

    .venv/bin/python bench/controlplane.py [--seconds 5] [--concurrency 16]

Targets (single process): >= 1000 GET/s, >= 300 POST/s, p99 <= 50 ms.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path

import httpx

API_KEY = "bench-key"
LISTENING = "deployplane control plane listening on "


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process (Linux): a figure that, unlike wall-clock
    throughput, does not depend on what else the machine is running."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def start_server(workdir: Path) -> tuple[subprocess.Popen[str], str]:
    database = f"sqlite+aiosqlite:///{workdir / 'controlplane.db'}"
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "deployplane.cli",
            "controlplane",
            "serve",
            "--host",
            "127.0.0.1",
            "--port",
            "0",
            "--database",
            database,
            "--api-key",
            API_KEY,
        ],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    assert process.stdout is not None
    for line in process.stdout:
        if line.startswith(LISTENING):
            return process, line[len(LISTENING) :].strip()
    process.wait()
    raise SystemExit(f"server exited with {process.returncode} before listening")


async def drive(
    name: str,
    call: Callable[[httpx.AsyncClient, int], Awaitable[httpx.Response]],
    *,
    client: httpx.AsyncClient,
    seconds: float,
    concurrency: int,
    expected: int,
    server_pid: int,
) -> tuple[float, float, float]:
    latencies: list[float] = []
    failures = 0
    counter = itertools.count()
    deadline = time.perf_counter() + seconds

    async def worker() -> None:
        nonlocal failures
        while time.perf_counter() < deadline:
            started = time.perf_counter()
            response = await call(client, next(counter))
            latencies.append(time.perf_counter() - started)
            if response.status_code != expected:
                failures += 1

    began, cpu_before = time.perf_counter(), cpu_seconds(server_pid)
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    elapsed = time.perf_counter() - began
    cpu_per_request = (cpu_seconds(server_pid) - cpu_before) / max(1, len(latencies))
    rate = len(latencies) / elapsed
    quantiles = statistics.quantiles(latencies, n=100)
    p50, p99 = quantiles[49] * 1000, quantiles[98] * 1000
    print(
        f"{name:<34} {rate:8.0f} req/s   p50 {p50:6.1f} ms   p99 {p99:6.1f} ms"
        f"   ({len(latencies)} requests, {failures} unexpected statuses)",
        flush=True,
    )
    print(
        f"{'':<34} server CPU {cpu_per_request * 1000:.2f} ms/request"
        f" = {1 / cpu_per_request if cpu_per_request else float('inf'):.0f} req/s per free core",
        flush=True,
    )
    return rate, p50, p99


async def run(base_url: str, *, seconds: float, concurrency: int, server_pid: int) -> None:
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    async with httpx.AsyncClient(
        base_url=base_url, headers={"X-Api-Key": API_KEY}, limits=limits, timeout=30
    ) as client:
        prefix = uuid.uuid4().hex[:8]

        def body(index: int) -> dict[str, object]:
            return {
                "name": f"bench-{prefix}-{index}",
                "source": "external_docker",
                "source_revision_config": {"image_uri": f"registry.example.com/app:{index}"},
                "secrets": [{"name": "TOKEN", "value": "not-a-real-secret"}],
            }

        seed = await client.post("/v2/deployments", json=body(-1))
        seed.raise_for_status()
        deployment_id = seed.json()["id"]
        for _ in range(50):  # warm up connections and caches
            await client.get(f"/v2/deployments/{deployment_id}")

        async def get(c: httpx.AsyncClient, _: int) -> httpx.Response:
            return await c.get(f"/v2/deployments/{deployment_id}")

        async def post(c: httpx.AsyncClient, index: int) -> httpx.Response:
            return await c.post("/v2/deployments", json=body(index))

        print(f"concurrency {concurrency}, {seconds:g} s per operation", flush=True)
        await drive(
            "GET /v2/deployments/{id}",
            get,
            client=client,
            seconds=seconds,
            concurrency=concurrency,
            expected=200,
            server_pid=server_pid,
        )
        await drive(
            "POST /v2/deployments",
            post,
            client=client,
            seconds=seconds,
            concurrency=concurrency,
            expected=201,
            server_pid=server_pid,
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--concurrency", type=int, default=16)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as workdir:
        process, base_url = start_server(Path(workdir))
        try:
            asyncio.run(
                run(
                    base_url,
                    seconds=args.seconds,
                    concurrency=args.concurrency,
                    server_pid=process.pid,
                )
            )
        finally:
            process.terminate()
            process.wait(timeout=10)


if __name__ == "__main__":
    main()
