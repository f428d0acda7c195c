"""Status patches authenticate the way the official client would: a ServiceAccount
token (kubeconfig or in-cluster) goes out as `Authorization: Bearer ...`."""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

from aiohttp import web
from kubernetes import client

from deployplane.kube.api import KubernetesApi
from deployplane.reconcile.eventrecorder import PendingEvent, involved_object
from deployplane.reconcile.outcome import EventRecord


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


async def _serve(handler: Any, method: str = "*") -> tuple[web.AppRunner, KubernetesApi]:
    app = web.Application()
    app.router.add_route(method, "/{tail:.*}", handler)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    cfg = client.Configuration()
    cfg.host = f"http://127.0.0.1:{port}"
    return runner, KubernetesApi(client.ApiClient(cfg))


async def test_events_are_posted_as_kopf_posted_them_with_long_messages_cut() -> None:
    seen: list[dict[str, Any]] = []

    async def handler(request: web.Request) -> web.Response:
        seen.append({"path": request.path, "body": json.loads(await request.text())})
        return web.json_response({}, status=201)

    runner, api = await _serve(handler)
    involved = {
        "apiVersion": "deployplane.io/v1alpha1",
        "kind": "AgentDeployment",
        "metadata": {"namespace": "ns", "name": "a", "uid": "u-1", "annotations": {"x": "y"}},
        "spec": {"big": "spec"},
    }
    recorded_at = dt.datetime(2026, 11, 23, 5, 30, 1, tzinfo=dt.UTC)
    first_event = EventRecord("Normal", "Created", "Created deployment d-1")
    try:
        await api.post_event(PendingEvent(involved_object(involved), first_event, recorded_at))
        long = EventRecord("Warning", "Stalled", "x" * 5000)
        await api.post_event(PendingEvent(involved_object(involved), long, recorded_at))
    finally:
        await api.aclose()
        await runner.cleanup()
    first, second = seen
    assert first["path"] == "/api/v1/namespaces/ns/events"
    event = first["body"]
    assert event["involvedObject"] == {
        "apiVersion": "deployplane.io/v1alpha1",
        "kind": "AgentDeployment",
        "name": "a",
        "uid": "u-1",
        "namespace": "ns",
    }
    assert (event["type"], event["reason"], event["message"]) == (
        "Normal",
        "Created",
        "Created deployment d-1",
    )
    assert event["source"] == {"component": "kopf"}
    # Stamped when the pass recorded it, not when the recorder got to post it.
    stamps = {event[k] for k in ("firstTimestamp", "lastTimestamp", "eventTime")}
    assert stamps == {"2026-11-23T05:30:01+00:00"}
    assert event["metadata"] == {"namespace": "ns", "generateName": "kopf-event-"}
    assert len(second["body"]["message"]) <= 1024
    assert "..." in second["body"]["message"]


async def test_our_finalizer_comes_off_with_a_test_of_the_list_and_a_retry_when_it_changed() -> (
    None
):
    """Another controller adds its finalizer between our read and our patch: the guarded
    patch is refused (422), read again, and theirs is kept."""
    lists = [["deployplane.io/finalizer"], ["deployplane.io/finalizer", "other.io/keep"]]
    patches: list[Any] = []

    async def handler(request: web.Request) -> web.Response:
        if request.method == "GET":
            current = lists[0] if not patches else lists[1]
            return web.json_response({"metadata": {"finalizers": current}})
        ops = json.loads(await request.text())
        patches.append(ops)
        if len(patches) == 1:
            return web.json_response({}, status=422)
        return web.json_response({})

    runner, api = await _serve(handler)
    try:
        assert await api.remove_finalizer("agentdeployments", "ns", "a", "deployplane.io/finalizer")
    finally:
        await api.aclose()
        await runner.cleanup()
    assert patches[0][0] == {
        "op": "test",
        "path": "/metadata/finalizers",
        "value": ["deployplane.io/finalizer"],
    }
    assert patches[1][1] == {
        "op": "replace",
        "path": "/metadata/finalizers",
        "value": ["other.io/keep"],
    }
