"""Status patches authenticate the way the official client would: a ServiceAccount
token (kubeconfig or in-cluster) goes out as `Authorization: Bearer ...`."""

from __future__ import annotations

import json
from typing import Any

from aiohttp import web
from kubernetes import client

from deployplane.controller.kubeapi import KubernetesApi


async def test_status_patch_sends_the_bearer_token_and_a_merge_patch() -> None:
    seen: list[dict[str, Any]] = []

    async def handler(request: web.Request) -> web.Response:
        seen.append(
            {
                "path": request.path,
                "auth": request.headers.get("Authorization"),
                "type": request.headers.get("Content-Type"),
                "body": json.loads(await request.text()),
            }
        )
        return web.json_response({})

    app = web.Application()
    app.router.add_patch("/{tail:.*}", handler)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    try:
        cfg = client.Configuration()
        cfg.host = f"http://127.0.0.1:{port}"
        # Exactly what kubernetes.config stores for a token kubeconfig / in-cluster login.
        cfg.api_key = {"BearerToken": "Bearer sa-token-123"}
        api = KubernetesApi(client.ApiClient(cfg))
        try:
            assert await api.patch_status("agentdeployments", "ns", "a", {"x": 1}) is True
        finally:
            await api.aclose()
    finally:
        await runner.cleanup()

    assert seen == [
        {
            "path": "/apis/deployplane.io/v1alpha1/namespaces/ns/agentdeployments/a/status",
            "auth": "Bearer sa-token-123",
            "type": "application/merge-patch+json",
            "body": {"status": {"x": 1}},
        }
    ]
