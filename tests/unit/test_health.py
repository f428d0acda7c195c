"""Health that tells the truth: the probe (Kopf's liveness endpoint, `kopf.on.probe`)
fails once the Kubernetes API or a watch has been failing for longer than
DEPLOYPLANE_UNHEALTHY_AFTER; a metric and one log line say which."""

from __future__ import annotations

import asyncio
import logging

import kopf
import pytest
from tests.support.fakekube import FakeKube

from deployplane.controller import handlers
from deployplane.controller.config import OperatorConfig
from deployplane.controller.metrics import exported_metric_names
from deployplane.controller.runtime import Runtime, build_runtime
from deployplane.kube.health import FailureClock


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def runtime_with(health: FailureClock) -> Runtime:
    config = OperatorConfig(unhealthy_after=60.0)
    return build_runtime(config, FakeKube(), health=health)  # type: ignore[arg-type]


def test_the_probe_fails_past_the_threshold_and_recovers(caplog: pytest.LogCaptureFixture) -> None:
    clock = Clock()
    health = FailureClock(clock=clock)
    memo = kopf.Memo(runtime=runtime_with(health))
    assert handlers.health(memo=memo) == {}
    health.failed("watch agentdeployments", "APIForbiddenError: 403")
    clock.now += 30
    assert handlers.health(memo=memo) == {"watch agentdeployments": 30.0}, "not yet"
    clock.now += 31
    with caplog.at_level(logging.WARNING, "deployplane.kube.health"):
        with pytest.raises(kopf.PermanentError, match=r"watch agentdeployments .*403"):
            handlers.health(memo=memo)
        with pytest.raises(kopf.PermanentError):
            handlers.health(memo=memo)
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 1, "one line per failure, not one per probe"
    assert "watch agentdeployments failing for 61s" in lines[0]
    health.succeeded("watch agentdeployments")
    assert handlers.health(memo=memo) == {}


def test_the_probe_says_how_long_ago_each_kind_had_an_event_and_never_fails_on_it() -> None:
    """A quiet cluster sends no event for hours: the age informs, it never fails."""
    clock = Clock()
    runtime = runtime_with(FailureClock(clock=clock))
    runtime.clock = clock
    memo = kopf.Memo(runtime=runtime)
    body = {"metadata": {"namespace": "n", "name": "a", "uid": "u"}, "spec": {}}
    asyncio.run(handlers.on_event("Listener", {"type": None, "object": body}, memo))
    clock.now += 86_400
    assert handlers.health(memo=memo) == {"seconds since a Listener event": 86_400.0}


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
