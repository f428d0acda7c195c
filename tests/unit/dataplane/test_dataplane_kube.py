"""The agent's Kubernetes calls (dataplane/kube.py) against a recording fake apiserver
on 127.0.0.1: paths, server-side apply parameters, foreground delete, errors that never
echo a request body."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer
from kubernetes import client

from deployplane.dataplane.kube import FIELD_MANAGER, ClusterApi, ClusterError, object_path


@pytest.mark.parametrize(
    ("api_version", "kind", "name", "path"),
    [
        ("v1", "ConfigMap", "a", "/api/v1/namespaces/ns/configmaps/a"),
        ("apps/v1", "Deployment", "a", "/apis/apps/v1/namespaces/ns/deployments/a"),
        ("apps/v1", "StatefulSet", None, "/apis/apps/v1/namespaces/ns/statefulsets"),
        (
            "autoscaling/v2",
            "HorizontalPodAutoscaler",
            "a",
            "/apis/autoscaling/v2/namespaces/ns/horizontalpodautoscalers/a",
        ),
    ],
)
def test_object_path(api_version: str, kind: str, name: str | None, path: str) -> None:
    assert object_path(api_version, kind, "ns", name) == path


@pytest.mark.parametrize(
    ("status", "retryable"), [(0, True), (409, True), (429, True), (503, True), (403, False)]
)
def test_which_refusals_a_retry_may_get_past(status: int, retryable: bool) -> None:
    assert ClusterError("x", status=status).retryable is retryable


@pytest.fixture
async def apiserver() -> AsyncIterator[tuple[ClusterApi, list[dict[str, Any]]]]:
    seen: list[dict[str, Any]] = []

    async def handle(request: web.Request) -> web.Response:
        body = await request.text()
        seen.append(
            {
                "method": request.method,
                "path": request.path,
                "query": dict(request.query),
                "type": request.headers.get("Content-Type"),
                "body": json.loads(body) if body else None,
            }
        )
        if request.path.endswith("/missing"):
            return web.json_response({"kind": "Status", "message": "not found"}, status=404)
        if request.path.endswith("/denied"):
            message = 'secrets "denied" is forbidden: User cannot patch'
            return web.json_response({"kind": "Status", "message": message}, status=403)
        if request.method == "GET" and request.path.endswith("/configmaps"):
            return web.json_response({"items": [{"metadata": {"name": "a"}}]})
        return web.json_response({"metadata": {"uid": "u-1"}})

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", handle)
    server = TestServer(app, host="127.0.0.1")
    await server.start_server()
    configuration = client.Configuration()
    configuration.host = str(server.make_url("")).rstrip("/")
    cluster = ClusterApi(client.ApiClient(configuration))
    yield cluster, seen
    await cluster.aclose()
    await server.close()


async def test_apply_is_a_forced_server_side_apply_under_the_agents_field_manager(
    apiserver: tuple[ClusterApi, list[dict[str, Any]]],
) -> None:
    cluster, seen = apiserver
    obj = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "namespace": "ns"}}
    answer = await cluster.apply(obj)
    assert answer["metadata"]["uid"] == "u-1"
    (request,) = seen
    assert request["method"] == "PATCH"
    assert request["path"] == "/api/v1/namespaces/ns/secrets/s"
    assert request["query"] == {"fieldManager": FIELD_MANAGER, "force": "true"}
    assert request["type"] == "application/apply-patch+yaml"
    assert request["body"] == obj


async def test_get_list_and_foreground_delete(
    apiserver: tuple[ClusterApi, list[dict[str, Any]]],
) -> None:
    cluster, seen = apiserver
    assert await cluster.get("v1", "ConfigMap", "ns", "missing") is None
    listed = await cluster.list("v1", "ConfigMap", "ns", {"b": "2", "a": "1"})
    assert listed == [{"metadata": {"name": "a"}}]
    assert seen[-1]["query"] == {"labelSelector": "a=1,b=2"}
    assert await cluster.delete("v1", "ConfigMap", "ns", "a") is True
    assert seen[-1]["body"]["propagationPolicy"] == "Foreground"
    assert await cluster.delete("v1", "ConfigMap", "ns", "missing") is False


async def test_a_refusal_names_the_apiservers_reason_never_the_body(
    apiserver: tuple[ClusterApi, list[dict[str, Any]]],
) -> None:
    cluster, _ = apiserver
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "denied", "namespace": "ns"},
        "data": {"password": "c2VjcmV0LXZhbHVl"},
    }
    with pytest.raises(ClusterError) as caught:
        await cluster.apply(secret)
    assert caught.value.status == 403
    assert "forbidden" in str(caught.value)
    assert "c2VjcmV0LXZhbHVl" not in str(caught.value)
    assert not caught.value.retryable


async def test_pod_log_reads_the_previous_run_or_the_start_of_the_running_one(
    apiserver: tuple[ClusterApi, list[dict[str, Any]]],
) -> None:
    cluster, seen = apiserver
    await cluster.pod_log("ns", "p", "agent-server", tail_lines=30)
    assert seen[-1]["path"] == "/api/v1/namespaces/ns/pods/p/log"
    assert seen[-1]["query"] == {"container": "agent-server", "previous": "true", "tailLines": "30"}
    await cluster.pod_log("ns", "p", "agent-server", previous=False, limit_bytes=1024)
    assert seen[-1]["query"] == {
        "container": "agent-server",
        "previous": "false",
        "limitBytes": "1024",
    }
