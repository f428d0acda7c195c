"""Operator metrics: series move with each resource's state instead of piling up."""

from __future__ import annotations

import urllib.request
from typing import Any

from deployplane.controller.metrics import OperatorMetrics, exported_metric_names, result_of
from deployplane.kinds.agentdeployment.status import AgentDeploymentStatus
from deployplane.reconcile.outcome import Outcome, State

STAMP = "2026-01-01T00:00:00Z"


def outcome(
    ready: str,
    *,
    synced: str = "True",
    stalled: str = "False",
    revision: str | None = None,
    since: str = STAMP,
) -> Outcome[AgentDeploymentStatus]:
    conditions = [
        {"type": "Ready", "status": ready},
        {"type": "Synced", "status": synced},
        {"type": "Stalled", "status": stalled},
    ]
    status: dict[str, Any] = {
        "conditions": [{**c, "reason": "R", "lastTransitionTime": since} for c in conditions]
    }
    if revision:
        status["revision"] = {"id": "r", "status": revision}
    # The state the reconciler gives such conditions (test_reconciler's
    # test_outcome_state_is_what_the_conditions_say proves it).
    if stalled == "True":
        state = State.STALLED
    elif synced == "False":
        state = State.RETRYING
    else:
        state = State.READY if ready == "True" else State.PROGRESSING
    model = AgentDeploymentStatus.model_validate(status)
    return Outcome(status=model, state=state, requeue_after=1.0)


def sample(m: OperatorMetrics, name: str, **labels: str) -> float:
    value = m.registry.get_sample_value(name, labels)
    return 0.0 if value is None else value


def test_result_words() -> None:
    assert result_of(outcome("True")) == "ready"
    assert result_of(outcome("False")) == "progressing"
    assert result_of(outcome("Unknown", synced="False")) == "retrying"
    assert result_of(outcome("False", synced="False", stalled="True")) == "stalled"


def test_revision_gauge_moves_with_the_resource_and_forget_clears_it() -> None:
    m = OperatorMetrics()
    m.observe_outcome("AgentDeployment", "ns/a", outcome("False", revision="BUILDING"))
    m.observe_outcome("AgentDeployment", "ns/b", outcome("False", revision="BUILDING"))
    assert sample(m, "deployplane_revisions", kind="AgentDeployment", status="BUILDING") == 2
    assert sample(m, "deployplane_resources_not_ready", kind="AgentDeployment") == 2

    m.observe_outcome("AgentDeployment", "ns/a", outcome("True", revision="DEPLOYED"))
    assert sample(m, "deployplane_revisions", kind="AgentDeployment", status="BUILDING") == 1
    assert sample(m, "deployplane_revisions", kind="AgentDeployment", status="DEPLOYED") == 1
    assert sample(m, "deployplane_resources_not_ready", kind="AgentDeployment") == 1
    assert sample(m, "deployplane_reconciles_total", kind="AgentDeployment", result="ready") == 1

    m.forget("AgentDeployment", "ns/b")
    assert sample(m, "deployplane_revisions", kind="AgentDeployment", status="BUILDING") == 0
    assert sample(m, "deployplane_resources_not_ready", kind="AgentDeployment") == 0


def test_api_requests_counted_by_endpoint_and_code_with_latency() -> None:
    m = OperatorMetrics()
    m.observe_api("GET", "/v2/deployments/{deployment_id}", 200, 0.004)
    m.observe_api("GET", "/v2/deployments/{deployment_id}", 503, 0.2)
    labels = {"endpoint": "/v2/deployments/{deployment_id}", "method": "GET"}
    assert sample(m, "deployplane_api_requests_total", code="200", **labels) == 1
    assert sample(m, "deployplane_api_requests_total", code="503", **labels) == 1
    assert sample(m, "deployplane_api_request_duration_seconds_count", **labels) == 2


def test_metrics_are_served_over_http() -> None:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    m = OperatorMetrics()
    m.observe_api("POST", "/v2/deployments", 201, 0.01)
    m.serve(port, "127.0.0.1")
    body = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
    assert (
        'deployplane_api_requests_total{code="201",endpoint="/v2/deployments",method="POST"} 1.0'
        in body
    )


def test_resources_by_condition_move_with_the_resource() -> None:
    m = OperatorMetrics()
    m.observe_outcome("AgentDeployment", "ns/a", outcome("False"))
    m.observe_outcome("AgentDeployment", "ns/b", outcome("False", synced="False", stalled="True"))
    by = {"kind": "AgentDeployment"}
    assert sample(m, "deployplane_resources", condition="Ready", status="False", **by) == 2
    assert sample(m, "deployplane_resources", condition="Stalled", status="True", **by) == 1
    # No Reconciling condition in these statuses: an abnormal-true condition that is
    # absent is False (kstatus), counted as such, never missing.
    assert sample(m, "deployplane_resources", condition="Reconciling", status="False", **by) == 2
    assert sample(m, "deployplane_resources", condition="Stalled", status="False", **by) == 1

    m.observe_outcome("AgentDeployment", "ns/b", outcome("True"))
    assert sample(m, "deployplane_resources", condition="Stalled", status="True", **by) == 0
    assert sample(m, "deployplane_resources", condition="Ready", status="True", **by) == 1
    m.forget("AgentDeployment", "ns/a")
    m.forget("AgentDeployment", "ns/b")
    for status in ("True", "False", "Unknown"):
        assert sample(m, "deployplane_resources", condition="Ready", status=status, **by) == 0


def test_not_ready_since_is_the_oldest_ready_transition_and_goes_when_all_are_ready() -> None:
    m = OperatorMetrics()

    def not_ready_since(stamp: str) -> Outcome[AgentDeploymentStatus]:
        return outcome("False", since=stamp)

    m.observe_outcome("AgentDeployment", "ns/a", not_ready_since("2026-01-01T00:10:00Z"))
    m.observe_outcome("AgentDeployment", "ns/b", not_ready_since("2026-01-01T00:00:00Z"))
    name = "deployplane_resources_not_ready_since_timestamp_seconds"
    assert sample(m, name, kind="AgentDeployment") == 1767225600.0  # 2026-01-01T00:00:00Z
    m.observe_outcome("AgentDeployment", "ns/b", outcome("True"))
    assert sample(m, name, kind="AgentDeployment") == 1767225600.0 + 600
    m.forget("AgentDeployment", "ns/a")
    assert m.registry.get_sample_value(name, {"kind": "AgentDeployment"}) is None


def test_exported_metric_names_are_the_sample_names_served() -> None:
    m = OperatorMetrics()
    m.observe_api("GET", "/v2/deployments", 200, 0.01)
    m.observe_outcome("Listener", "ns/l", outcome("False", revision="BUILDING"))
    served = {s.name for family in m.registry.collect() for s in family.samples}
    assert served <= exported_metric_names(m.registry)
    assert "deployplane_api_request_duration_seconds_bucket" in exported_metric_names()
