"""The operator's two probes (`deployplane.controller.probes`): liveness fails only when
the process is stuck (a task that moves the work ended), never on the Kubernetes API or
the control plane; readiness fails once the Kubernetes API or a watch has been failing
for longer than DEPLOYPLANE_UNHEALTHY_AFTER, or while the control plane does not answer;
a metric and one log line say what fails."""

from __future__ import annotations

import asyncio
import logging
import socket
from collections.abc import Callable
from typing import Any

import httpx
import kopf
import pytest
from tests.support.fakekube import FakeKube

from deployplane.api.client import ControlPlaneClient
from deployplane.api.connection import ConnectionSettings
from deployplane.controller import handlers, kopfwatch
from deployplane.controller.config import OperatorConfig
from deployplane.controller.metrics import exported_metric_names
from deployplane.controller.runtime import Runtime, build_runtime
from deployplane.kube.health import FailureClock
from deployplane.serving import probes
from deployplane.serving.config import ConfigError, Endpoint
from deployplane.serving.probes import ProbeServer, Reachability, Readiness

URL = "http://control-plane.test"


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def runtime_with(health: FailureClock, kube: FakeKube | None = None, **config: Any) -> Runtime:
    settings = OperatorConfig(unhealthy_after=60.0, **config)
    return build_runtime(settings, kube or FakeKube(), health=health)  # type: ignore[arg-type]


def alive(memo: kopf.Memo) -> dict[str, Any]:
    return asyncio.run(handlers.alive(memo=memo))


def control_plane(answer: Callable[[httpx.Request], httpx.Response]) -> ControlPlaneClient:
    return ControlPlaneClient(URL, transport=httpx.MockTransport(answer), max_retries=0)


def ready(readiness: Readiness) -> tuple[bool, dict[str, Any]]:
    return asyncio.run(readiness.check())


def test_a_lost_apiserver_makes_the_operator_unready_at_once_never_dead() -> None:
    clock = Clock()
    kube = FakeKube()
    runtime = runtime_with(FailureClock(clock=clock), kube)
    runtime.readiness.kubernetes.clock = clock
    memo = kopf.Memo(runtime=runtime)
    assert ready(runtime.readiness) == (True, {})
    kube.apiserver_away = "[-]etcd failed: reason withheld"
    clock.now += probes.RECHECK
    found = {"kubernetes": "GET /readyz: 500 [-]etcd failed: reason withheld"}
    assert ready(runtime.readiness) == (False, found)
    assert alive(memo) == {}, "alive: a restart cannot bring the apiserver back"
    kube.apiserver_away = None
    clock.now += probes.RECHECK
    assert ready(runtime.readiness) == (True, {})


def test_watches_failing_past_the_threshold_make_the_operator_unready_never_dead(
    caplog: pytest.LogCaptureFixture,
) -> None:
    clock = Clock()
    health = FailureClock(clock=clock)
    runtime = runtime_with(health)
    memo = kopf.Memo(runtime=runtime)
    assert ready(runtime.readiness) == (True, {})
    health.failed("api", "GET /api/v1/namespaces/a/secrets/s: Cannot connect")
    health.failed("watch agentdeployments", "ClientConnectorError: refused")
    clock.now += 30
    assert ready(runtime.readiness)[0], "not yet"
    clock.now += 31
    with caplog.at_level(logging.WARNING, "deployplane.kube.health"):
        is_ready, found = ready(runtime.readiness)
        assert not is_ready
        assert "refused" in found["kubernetes watch agentdeployments"]
        assert "Cannot connect" in found["kubernetes api"]
        assert not ready(runtime.readiness)[0]
        # Alive all along: restarting cannot bring the apiserver back.
        assert alive(memo) == {"api": 61.0, "watch agentdeployments": 61.0}
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 2, "one line per failure, not one per probe"
    assert "watch agentdeployments failing for 61s" in " ".join(lines)
    health.succeeded("api")
    health.succeeded("watch agentdeployments")
    assert ready(runtime.readiness) == (True, {})


def test_an_unreachable_control_plane_makes_the_operator_unready_never_dead() -> None:
    answers: list[int | None] = [None, 503, 401, 200]
    seen: list[str] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(f"{request.method} {request.url.path}?{request.url.query.decode()}")
        status = answers.pop(0)
        if status is None:
            raise httpx.ConnectError("connection refused", request=request)
        return httpx.Response(status, json={"resources": [], "offset": 0})

    clock = Clock()
    runtime = runtime_with(FailureClock(clock=clock))
    check = Reachability(probes.ask_control_plane(control_plane(answer)), clock=clock)
    readiness = Readiness(runtime.health, runtime.readiness.kubernetes, check, 60.0)
    memo = kopf.Memo(runtime=runtime)
    is_ready, found = ready(readiness)
    assert not is_ready
    assert "connection refused" in found["control plane"]
    assert alive(memo) == {}, "alive while the control plane is away"
    clock.now += check.recheck
    assert not ready(readiness)[0], "a 5xx is no answer either"
    clock.now += check.recheck
    assert ready(readiness) == (True, {}), "a refused key is an answer: the resources say it"
    assert ready(readiness) == (True, {}), "answered from the last check"
    assert seen == ["GET /v2/listeners?limit=1"] * 3
    clock.now += check.recheck
    assert ready(readiness) == (True, {})
    assert len(seen) == 4


def test_a_control_plane_slower_than_the_timeout_is_no_answer() -> None:
    async def scenario() -> str | None:
        async def answer(request: httpx.Request) -> httpx.Response:
            await asyncio.sleep(5)
            return httpx.Response(200, json={"resources": []})

        client = ControlPlaneClient(URL, transport=httpx.MockTransport(answer), max_retries=0)
        return await Reachability(probes.ask_control_plane(client), timeout=0.05).unreachable()

    assert asyncio.run(scenario()) == "no answer within 0.05s"


def test_the_operator_asks_its_own_control_plane_with_a_client_that_never_retries() -> None:
    connection = ConnectionSettings(URL, "k")
    apiserver = probes.ask_apiserver(FakeKube())
    readiness, closing = probes.build_readiness(FailureClock(), apiserver, connection, 60)
    assert readiness.control_plane is not None
    (close,) = closing
    client = close.__self__  # type: ignore[attr-defined]
    assert isinstance(client, ControlPlaneClient)
    assert client.max_retries == 0
    runtime = runtime_with(FailureClock())
    assert (runtime.readiness.control_plane, runtime.closing) == (None, [])


def test_liveness_fails_when_a_worker_or_the_event_recorder_ended() -> None:
    async def scenario() -> list[str]:
        runtime = runtime_with(FailureClock())
        memo = kopf.Memo(runtime=runtime)
        runtime.workers.start()
        runtime.events.start()
        outcomes = []
        try:
            assert await handlers.alive(memo=memo) == {}
            runtime.workers._tasks[0].cancel()  # a worker gone for good
            await asyncio.sleep(0)
            with pytest.raises(kopf.PermanentError) as first:
                await handlers.alive(memo=memo)
            outcomes.append(str(first.value))
            assert runtime.events._task is not None
            runtime.events._task.cancel()
            await asyncio.sleep(0)
            with pytest.raises(kopf.PermanentError) as second:
                await handlers.alive(memo=memo)
            outcomes.append(str(second.value))
        finally:
            await runtime.workers.stop(1)
            task = runtime.events._task
            if task is not None and not task.done():
                await runtime.events.stop(0.1)
        return outcomes

    first, second = asyncio.run(scenario())
    assert first == "stuck: 1 worker(s) of the pool ended"
    assert second == "stuck: 1 worker(s) of the pool ended; the event recorder ended"


def test_liveness_says_how_long_ago_each_kind_had_an_event_and_never_fails_on_it() -> None:
    """A quiet cluster sends no event for hours: the age informs, it never fails."""
    clock = Clock()
    runtime = runtime_with(FailureClock(clock=clock))
    runtime.clock = clock
    memo = kopf.Memo(runtime=runtime)
    body = {"metadata": {"namespace": "n", "name": "a", "uid": "u"}, "spec": {}}
    asyncio.run(handlers.on_event("Listener", {"type": None, "object": body}, memo))
    clock.now += 86_400
    assert alive(memo) == {"seconds since a Listener event": 86_400.0}


def test_the_metric_says_what_has_been_failing_for_how_long() -> None:
    clock = Clock()
    health = FailureClock(clock=clock)
    runtime = runtime_with(health)
    health.failed("api", "PATCH ...: 503")
    clock.now += 12
    registry = runtime.metrics.registry
    value = registry.get_sample_value("deployplane_kube_failing_seconds", {"what": "api"})
    assert value == 12.0
    assert "deployplane_kube_failing_seconds" in exported_metric_names(registry)
    health.succeeded("api")
    assert registry.get_sample_value("deployplane_kube_failing_seconds", {"what": "api"}) is None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_readiness_is_served_as_200_or_503_with_what_was_found() -> None:
    state: dict[str, Any] = {"ready": True, "found": {}}

    async def check() -> tuple[bool, dict[str, Any]]:
        return state["ready"], state["found"]

    async def scenario() -> list[tuple[int, Any]]:
        endpoint = Endpoint.parse(f"http://127.0.0.1:{_free_port()}/readyz", "--readiness")
        server = ProbeServer(endpoint, check)
        await server.start()
        answers = []
        try:
            async with httpx.AsyncClient() as http:
                url = f"http://127.0.0.1:{endpoint.port}/readyz"
                for ready_now in (True, False):
                    state.update(ready=ready_now, found={} if ready_now else {"control plane": "x"})
                    response = await http.get(url)
                    answers.append((response.status_code, response.json()))
                answers.append(((await http.get(url.replace("readyz", "other"))).status_code, None))
        finally:
            await server.stop()
        return answers

    assert asyncio.run(scenario()) == [(200, {}), (503, {"control plane": "x"}), (404, None)]


@pytest.mark.parametrize(
    "url", ["0.0.0.0:8081/readyz", "https://0.0.0.0:8081/readyz", "http://0.0.0.0/readyz"]
)
def test_a_readiness_endpoint_that_cannot_be_served_is_refused_naming_it(url: str) -> None:
    with pytest.raises(ConfigError, match=r"DEPLOYPLANE_READINESS_ENDPOINT must be http://HOST"):
        OperatorConfig.from_env({"DEPLOYPLANE_READINESS_ENDPOINT": url})
    config = OperatorConfig.from_env({"DEPLOYPLANE_READINESS_ENDPOINT": "http://0.0.0.0:81/r"})
    assert config.readiness == Endpoint("0.0.0.0", 81, "/r")


def test_the_probe_says_the_scope_kopf_lists() -> None:
    """`/healthz` holds every probe's answer by its id: `scope` says what is watched."""
    saved = set(kopfwatch.GUARD.listed)
    try:
        kopfwatch.GUARD.listed = {"demo"}
        assert handlers.scope() == {"watching": "demo"}
        kopfwatch.GUARD.listed = {None}
        assert handlers.scope() == {"watching": "every namespace"}
    finally:
        kopfwatch.GUARD.listed = saved


@pytest.mark.parametrize(
    ("namespaces", "words"),
    [
        ("", "every namespace (cluster-wide)"),
        ("demo", "namespaces demo only"),
        ("team-a, team-*", "namespaces team-a, team-* only"),
    ],
)
def test_the_start_up_line_says_what_kopf_was_told_to_watch(namespaces: str, words: str) -> None:
    assert OperatorConfig.from_env({"DEPLOYPLANE_NAMESPACES": namespaces}).scope() == words
