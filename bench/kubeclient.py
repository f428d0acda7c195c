"""Which Kubernetes client should the operator write through: CPU per request.

    python -m bench.kubeclient [--requests 3000]    # needs kubernetes_asyncio and lightkube

The operator's hot path is status patches (three writes per new resource, and Events).
A stub apiserver in a child process answers every PATCH with a 2 KiB custom object (the
size of a Ready AgentDeployment); the client side runs the same merge patches, 32 in
flight, through each client, and its process CPU per 1,000 requests is what counts (the
apiserver's share is the same whatever client sends). Prints `BENCH` lines.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import socket
import time
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web

PLURAL, NS = "agentdeployments", "bench"
BODY = {
    "apiVersion": "deployplane.io/v1alpha1",
    "kind": "AgentDeployment",
    "metadata": {"name": "a", "namespace": NS, "resourceVersion": "1", "uid": "u"},
    "spec": {"source": "external_docker", "x": "y" * 600},
    "status": {"conditions": [{"type": "Ready", "status": "True", "message": "m" * 600}]},
}


def serve(port: int) -> None:
    async def patch(request: web.Request) -> web.Response:
        await request.read()
        return web.json_response(BODY)

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", patch)
    web.run_app(app, host="127.0.0.1", port=port, print=None, access_log=None)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def drive(send: Callable[[int], Awaitable[Any]], count: int) -> float:
    """CPU seconds of this process for `count` sends, 32 at a time."""
    sem = asyncio.Semaphore(32)

    async def one(i: int) -> None:
        async with sem:
            await send(i)

    await asyncio.gather(*(one(i) for i in range(50)))  # warm up
    started = time.process_time()
    await asyncio.gather(*(one(i) for i in range(count)))
    return time.process_time() - started


async def raw(url: str, count: int) -> float:
    from kubernetes import client

    from deployplane.kube.api import KubernetesApi

    cfg = client.Configuration()
    cfg.host = url
    api = KubernetesApi(cfg)
    try:
        return await drive(lambda i: api.patch_status(PLURAL, NS, "a", {"n": i}), count)
    finally:
        await api.aclose()


async def kubernetes_asyncio(url: str, count: int) -> float:
    from kubernetes_asyncio import client

    cfg = client.Configuration(host=url)
    cfg.connection_pool_maxsize = 32  # its aiohttp connector's limit
    async with client.ApiClient(cfg) as api_client:
        custom = client.CustomObjectsApi(api_client)

        async def send(i: int) -> Any:
            return await custom.patch_namespaced_custom_object_status(
                "deployplane.io",
                "v1alpha1",
                NS,
                PLURAL,
                "a",
                {"status": {"n": i}},
                _content_type="application/merge-patch+json",
            )

        return await drive(send, count)


async def lightkube(url: str, count: int) -> float:
    from lightkube import AsyncClient, KubeConfig
    from lightkube.generic_resource import create_namespaced_resource
    from lightkube.types import PatchType

    kind = create_namespaced_resource("deployplane.io", "v1alpha1", "AgentDeployment", PLURAL)
    config = KubeConfig.from_dict(
        {
            "clusters": [{"name": "c", "cluster": {"server": url}}],
            "users": [{"name": "u", "user": {"token": "t"}}],
            "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
            "current-context": "x",
        }
    )
    client = AsyncClient(config=config, namespace=NS)

    async def send(i: int) -> Any:
        return await client.patch(
            kind.Status,
            "a",
            {"status": {"n": i}},
            patch_type=PatchType.MERGE,
        )

    try:
        return await drive(send, count)
    finally:
        await client.close()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=3000)
    args = parser.parse_args()
    port = free_port()
    server = multiprocessing.Process(target=serve, args=(port,), daemon=True)
    server.start()
    time.sleep(1.5)
    url = f"http://127.0.0.1:{port}"
    try:
        for name, run in (
            ("raw_aiohttp", raw),
            ("kubernetes_asyncio", kubernetes_asyncio),
            ("lightkube", lightkube),
        ):
            try:
                cpu = asyncio.run(run(url, args.requests))
            except ImportError as exc:
                print(f"# {name}: not installed ({exc})")
                continue
            per_1000 = cpu / args.requests * 1000
            print(f"BENCH kubeclient_{name}_cpu_s_per_1000_patches {per_1000:.3f}")
    finally:
        server.terminate()
        server.join(5)
    print(json.dumps({"requests": args.requests}))


if __name__ == "__main__":
    main()
