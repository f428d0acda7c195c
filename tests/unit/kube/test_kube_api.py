"""Status patches authenticate the way the official client would: a ServiceAccount
token (kubeconfig or in-cluster) goes out as `Authorization: Bearer ...`."""

from __future__ import annotations

import datetime as dt
import json
import logging
from typing import Any

import pytest
from aiohttp import web
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from deployplane.controller.outputstore import OutputsStore
from deployplane.kube.api import KubernetesApi
from deployplane.kube.retry import Backoff, parse_retry_after
from deployplane.reconcile.eventrecorder import PendingEvent, involved_object
from deployplane.reconcile.outcome import EventRecord
from deployplane.reconcile.outputs import ConfigMapError
from deployplane.serving import probes


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
    port = runner.addresses[0][1]
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
    port = runner.addresses[0][1]
    cfg = client.Configuration()
    cfg.host = f"http://127.0.0.1:{port}"
    return runner, KubernetesApi(client.ApiClient(cfg))


async def test_events_name_the_operator_the_pod_and_the_action_with_long_messages_cut(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("POD_NAME", "deployplane-7c9f-abcde")
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
    first_event = EventRecord("Normal", "Created", "Created deployment d-1", "Create")
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
    assert event["reportingComponent"] == "deployplane-operator"
    assert event["reportingInstance"] == "deployplane-7c9f-abcde"
    assert event["action"] == "Create"
    assert second["body"]["action"] == "Reconcile"
    assert event["source"] == {
        "component": "deployplane-operator",
        "host": "deployplane-7c9f-abcde",
    }
    # Stamped when the pass recorded it, not when the recorder got to post it.
    stamps = {event[k] for k in ("firstTimestamp", "lastTimestamp", "eventTime")}
    assert stamps == {"2026-11-23T05:30:01+00:00"}
    assert event["metadata"] == {"namespace": "ns", "generateName": "deployplane-"}
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


PROTECTION = "deployplane.io/secret-protection"


async def test_a_secret_is_protected_by_a_strategic_merge_that_keeps_other_finalizers(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A core object: its finalizers merge, so another controller's stay; a Secret being
    deleted (422) or gone (404) takes none, and says so; a role without `patch` on
    Secrets (403: an install whose RBAC predates the protection) is told once in the
    log, and the operator goes on without the protection."""
    answers = [200, 422, 404, 403, 403]
    seen: list[tuple[str, str, Any]] = []

    async def handler(request: web.Request) -> web.Response:
        seen.append((request.path, request.content_type, json.loads(await request.text())))
        return web.json_response({}, status=answers.pop(0))

    runner, api = await _serve(handler)
    try:
        assert await api.protect_secret("ns", "key", PROTECTION)
        assert not await api.protect_secret("ns", "key", PROTECTION)
        assert not await api.protect_secret("ns", "key", PROTECTION)
        with caplog.at_level(logging.WARNING, logger="deployplane.kube"):
            assert not await api.protect_secret("ns", "refused", PROTECTION)
            assert not await api.protect_secret("ns", "refused", PROTECTION)
        told = [r.getMessage() for r in caplog.records if "403" in r.getMessage()]
        assert len(told) == 1, told
        assert "secrets/refused" in told[0]
    finally:
        await api.aclose()
        await runner.cleanup()
    assert seen[0] == (
        "/api/v1/namespaces/ns/secrets/key",
        "application/strategic-merge-patch+json",
        {"metadata": {"finalizers": [PROTECTION], "labels": {PROTECTION: "true"}}},
    )


async def test_a_secrets_protection_comes_off_with_its_label_leaving_anothers_finalizer() -> None:
    stored: dict[str, Any] = {
        "metadata": {
            "finalizers": ["other.io/keep", PROTECTION],
            "labels": {PROTECTION: "true", "app": "x"},
            "deletionTimestamp": "2026-01-01T00:00:00Z",
        },
        "data": {"apiKey": "c2VjcmV0"},  # "secret"
    }
    patches: list[Any] = []

    async def handler(request: web.Request) -> web.Response:
        if request.method == "GET":
            return web.json_response(stored)
        patches.append(json.loads(await request.text()))
        stored["metadata"] = {"finalizers": ["other.io/keep"], "labels": {"app": "x"}}
        return web.json_response(stored)

    runner, api = await _serve(handler)
    try:
        read = await api.read_secret_state("ns", "key")
        assert read is not None
        assert (dict(read.data), read.finalizers, read.deleting) == (
            {"apiKey": "secret"},
            ("other.io/keep", PROTECTION),
            True,
        )
        assert await api.release_secret("ns", "key", PROTECTION)
        assert await api.release_secret("ns", "key", PROTECTION), "off already: no patch"
    finally:
        await api.aclose()
        await runner.cleanup()
    assert patches == [
        [
            {"op": "test", "path": "/metadata/finalizers", "value": ["other.io/keep", PROTECTION]},
            {"op": "replace", "path": "/metadata/finalizers", "value": ["other.io/keep"]},
            {"op": "remove", "path": "/metadata/labels/deployplane.io~1secret-protection"},
        ]
    ]


async def _serve_api(handler: Any, **kwargs: Any) -> tuple[web.AppRunner, KubernetesApi]:
    runner, plain = await _serve(handler)
    return runner, KubernetesApi(plain._configuration, **kwargs)


async def test_a_401_logs_in_again_and_sends_once_more() -> None:
    """An expired token (a rotated service-account token, an exec plugin's): the
    credentials are read anew (the kubeconfig, its exec plugin) and the request sent
    again with the new token, once."""
    seen: list[str | None] = []

    async def handler(request: web.Request) -> web.Response:
        seen.append(request.headers.get("Authorization"))
        if request.headers.get("Authorization") != "Bearer fresh":
            return web.json_response({"message": "Unauthorized"}, status=401)
        return web.json_response({})

    runner, plain = await _serve(handler)
    stale = plain._configuration
    stale.api_key = {"BearerToken": "Bearer expired"}
    logins: list[int] = []

    def reload() -> client.Configuration:
        logins.append(1)
        fresh = client.Configuration()
        fresh.host = stale.host
        fresh.api_key = {"BearerToken": "Bearer fresh"}
        return fresh

    api = KubernetesApi(stale, reload=reload)
    try:
        assert await api.patch_status("agentdeployments", "ns", "a", {"x": 1}) is True
        assert seen == ["Bearer expired", "Bearer fresh"]
        assert logins == [1]
        # Still refused after a new login: the error goes to the caller, no loop.
        stale.api_key = {"BearerToken": "Bearer expired"}
        api2 = KubernetesApi(stale, reload=lambda: stale)
        with pytest.raises(ApiException) as refused:
            await api2.patch_status("agentdeployments", "ns", "a", {"x": 1})
        assert refused.value.status == 401
        await api2.aclose()
    finally:
        await api.aclose()
        await runner.cleanup()


async def test_429_waits_as_the_server_says_and_5xx_backs_off_with_jitter() -> None:
    answers = [
        web.json_response({}, status=429, headers={"Retry-After": "3"}),
        web.json_response({}, status=503),
        web.json_response({}, status=500),
        web.json_response({}),
    ]

    async def handler(request: web.Request) -> web.Response:
        return answers.pop(0)

    slept: list[float] = []

    async def sleep(seconds: float) -> None:
        slept.append(seconds)

    backoff = Backoff(initial=0.5, maximum=30.0, jitter=0.2, rand=lambda: 0.5)
    runner, api = await _serve_api(handler, backoff=backoff, sleep=sleep)
    try:
        assert await api.patch_status("agentdeployments", "ns", "a", {"x": 1}) is True
        assert api.health.failing_for("api") == 0.0, "a success clears the failure"
    finally:
        await api.aclose()
        await runner.cleanup()
    # Retry-After 3 s (stretched by the jitter, never shortened), then 1 s and 2 s.
    assert slept == [3.0 * 1.1, 1.0 * 1.1, 2.0 * 1.1]


async def test_retries_are_bounded_and_the_failure_is_recorded_for_the_probes() -> None:
    async def handler(request: web.Request) -> web.Response:
        return web.json_response({"message": "etcd is down"}, status=503)

    async def sleep(seconds: float) -> None:
        return None

    runner, api = await _serve_api(handler, backoff=Backoff(attempts=2), sleep=sleep)
    try:
        with pytest.raises(ApiException) as failed:
            await api.patch_status("agentdeployments", "ns", "a", {"x": 1})
        assert failed.value.status == 503
        assert "api" in api.health.failing()
    finally:
        await api.aclose()
        await runner.cleanup()


async def test_adding_our_finalizer_never_drops_one_added_meanwhile() -> None:
    """Our merge patch carries the resourceVersion it was computed at; another
    controller's finalizer added since makes it a 409, the object is read again and
    both finalizers end up on it."""
    stored = {"finalizers": ["other.io/keep"], "resourceVersion": "8"}
    patches: list[dict[str, Any]] = []

    async def handler(request: web.Request) -> web.Response:
        if request.method == "GET":
            return web.json_response({"metadata": stored})
        patch = json.loads(await request.text())
        patches.append(patch)
        meta = patch["metadata"]
        if meta.get("resourceVersion") not in (None, stored["resourceVersion"]):
            return web.json_response({"message": "conflict"}, status=409)
        stored["finalizers"] = meta.get("finalizers", stored["finalizers"])
        return web.json_response({"metadata": stored})

    runner, api = await _serve(handler)
    try:
        added = await api.patch_object(
            "agentdeployments",
            "ns",
            "a",
            {"metadata": {"annotations": {"k": "v"}}},
            add_finalizer="deployplane.io/finalizer",
            finalizers=[],
            resource_version="7",
        )
    finally:
        await api.aclose()
        await runner.cleanup()
    assert added
    assert stored["finalizers"] == ["other.io/keep", "deployplane.io/finalizer"]
    assert [p["metadata"].get("resourceVersion") for p in patches] == ["7", "8"]
    assert all(p["metadata"]["annotations"] == {"k": "v"} for p in patches)


async def test_a_guarded_patch_is_not_sent_over_an_object_that_fails_the_guard() -> None:
    """With a guard, the patch is sent under the version the caller tested; after a
    409 the object read again is tested first, and one that fails the guard is left
    as it is (False), so a writer whose view is behind overwrites nothing."""
    stored: dict[str, Any] = {"annotations": {"owner": "other"}, "resourceVersion": "8"}
    patches: list[dict[str, Any]] = []

    async def handler(request: web.Request) -> web.Response:
        if request.method == "GET":
            return web.json_response({"metadata": stored})
        patch = json.loads(await request.text())
        patches.append(patch)
        if patch["metadata"].get("resourceVersion") != stored["resourceVersion"]:
            return web.json_response({"message": "conflict"}, status=409)
        stored["annotations"] = patch["metadata"]["annotations"]
        return web.json_response({"metadata": stored})

    def unowned(obj: Any) -> bool:
        return "owner" not in (obj.get("metadata") or {}).get("annotations", {})

    runner, api = await _serve(handler)
    try:
        patched = await api.patch_object(
            "agentdeployments",
            "ns",
            "a",
            {"metadata": {"annotations": {"owner": "me"}}},
            resource_version="7",
            guard=unowned,
        )
    finally:
        await api.aclose()
        await runner.cleanup()
    assert not patched
    assert [p["metadata"]["resourceVersion"] for p in patches] == ["7"]
    assert stored["annotations"] == {"owner": "other"}


def test_retry_after_reads_seconds_and_http_dates() -> None:
    assert parse_retry_after("7") == 7.0
    assert parse_retry_after(None) is None
    assert parse_retry_after("soon") is None
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:10 GMT", now=lambda: 1445412480.0) == 10.0
    assert parse_retry_after("-3") == 0.0


async def test_a_refused_configmap_request_is_told_as_the_outputs_port_error() -> None:
    """spec.writeOutputsTo's port: a 404 read is None, a refused write is a
    ConfigMapError naming the request and the apiserver's reason (the pass turns it
    into Synced=False, ConfigMapWriteFailed)."""

    async def handler(request: web.Request) -> web.Response:
        if request.method == "GET":
            return web.json_response({"kind": "Status", "message": "not found"}, status=404)
        message = 'configmaps is forbidden: User "sa" cannot create resource "configmaps"'
        return web.json_response({"kind": "Status", "message": message}, status=403)

    runner, api = await _serve(handler)
    store = OutputsStore(api)  # what the operator hands the outputs
    try:
        assert await store.read_config_map("ns", "out") is None
        with pytest.raises(ConfigMapError) as refused:
            await store.create_config_map("ns", {"metadata": {"name": "out"}})
    finally:
        await api.aclose()
        await runner.cleanup()
    assert str(refused.value) == (
        "POST /api/v1/namespaces/ns/configmaps: 403 "
        'configmaps is forbidden: User "sa" cannot create resource "configmaps"'
    )


async def test_list_objects_reads_every_page_of_500_by_its_continue_token() -> None:
    """A paged LIST (what a sharded instance reads when a connection is deleted): pages
    of `limit`, each asked with the previous page's continue token, until none."""
    asked: list[dict[str, str]] = []
    pages = {
        None: ({"continue": "t1"}, ["a", "b"]),
        "t1": ({"continue": "t2"}, ["c"]),
        "t2": ({}, []),
    }

    async def handler(request: web.Request) -> web.Response:
        asked.append({"path": request.path, **request.query})
        meta, names = pages[request.query.get("continue")]
        items = [{"metadata": {"name": name}} for name in names]
        return web.json_response({"metadata": meta, "items": items})

    runner, api = await _serve(handler, "GET")
    try:
        names = [obj["metadata"]["name"] async for obj in api.list_objects("listeners", "ns")]
    finally:
        await api.aclose()
        await runner.cleanup()
    assert names == ["a", "b", "c"]
    path = "/apis/deployplane.io/v1alpha1/namespaces/ns/listeners"
    assert asked == [
        {"path": path, "limit": "500"},
        {"path": path, "limit": "500", "continue": "t1"},
        {"path": path, "limit": "500", "continue": "t2"},
    ]


async def test_readiness_asks_the_apiservers_readyz_once_on_a_client_of_its_own() -> None:
    """Ready answers None; a not-ready apiserver (500) or none at all, the reason; a
    refused token is still an answer (the watches' failure clock judges lasting trouble);
    asked of a client without retries, the probe learns at once."""
    answers = [200, 500, 401, 401]
    seen: list[tuple[str, str | None]] = []

    async def handler(request: web.Request) -> web.Response:
        seen.append((request.path, request.headers.get("Authorization")))
        status = answers.pop(0)
        return web.Response(status=status, text="ok" if status == 200 else "[-]etcd failed")

    runner, api = await _serve(handler, "GET")
    api.backoff = Backoff(attempts=0)
    api._configuration.api_key = {"BearerToken": "Bearer sa-token-123"}
    ask = probes.ask_apiserver(api)
    try:
        assert await ask() is None
        assert await ask() == "GET /readyz: 500 [-]etcd failed"
        assert await ask() is None  # a 401 logs in again once, then is an answer
    finally:
        await runner.cleanup()
    assert [path for path, _ in seen] == ["/readyz"] * 4
    assert {auth for _, auth in seen} == {"Bearer sa-token-123"}
    refused = await ask()
    assert refused is not None
    assert refused.startswith("GET /readyz: ClientConnectorError")
    await api.aclose()
