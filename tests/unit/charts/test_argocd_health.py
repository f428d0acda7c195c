"""The chart's Argo CD health check (charts/deployplane/argocd/health.lua), executed as
Argo CD executes it (Lua 5.1, `obj` global) on status objects shaped exactly like the
operator writes them: the literal table below, and statuses produced by the reconciler's
own `compose_outcome` for every kind of verdict it can reach."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest
from tests.support.argocd import argocd_health

from deployplane.api import errors
from deployplane.crd.status import AgentDeploymentStatus
from deployplane.externals.agentdeployment import AgentDeploymentReason as ADReason
from deployplane.externals.errors import classify
from deployplane.reconcile.conditions import (
    FALSE,
    TRUE,
    UNKNOWN,
    ConditionType,
    Reason,
    set_condition,
)
from deployplane.reconcile.outcome import Verdict, compose_outcome
from deployplane.reconcile.schedule import Schedule, State
from deployplane.reconcile.status import to_kube

_Verdict = Verdict[AgentDeploymentStatus]


def _compose(previous: dict[str, Any], gen: int, verdict: _Verdict) -> dict[str, Any]:
    """`compose_outcome` over a status as Kubernetes holds it, and back."""
    status = AgentDeploymentStatus.model_validate(previous)
    return to_kube(compose_outcome(status, gen, verdict, 0, [], Schedule()).status)


DEPLOYMENT_ID = "6f0c2a8e-3a61-4a9b-9d0c-2f3e1b7c9a10"
REVISION_ID = "0b7d7e0e-5d0a-4a39-8f8c-0c1f5d0e2b44"
NOW = "2026-11-22T00:40:00Z"

Cond = tuple[str, str, str]  # (status, reason, message)
OK: Cond = (FALSE, Reason.RECONCILE_SUCCESS, "")


def _conditions(
    gen: int, *, ready: Cond, synced: Cond, reconciling: Cond, stalled: Cond
) -> list[dict[str, Any]]:
    """The four conditions as `compose_outcome` dumps them (camelCase, None left out)."""
    out = []
    for type_, (status, reason, message) in (
        (ConditionType.READY, ready),
        (ConditionType.SYNCED, synced),
        (ConditionType.RECONCILING, reconciling),
        (ConditionType.STALLED, stalled),
    ):
        c = set_condition([], type_, status, reason, message, gen, now=NOW)
        out.append(c.model_dump(mode="json", exclude_none=True))
    return out


def _agentdeployment(generation: int, status: dict[str, Any] | None = None) -> dict[str, Any]:
    obj: dict[str, Any] = {
        "apiVersion": "deployplane.io/v1alpha1",
        "kind": "AgentDeployment",
        "metadata": {
            "name": "support-bot",
            "namespace": "agents",
            "generation": generation,
            "uid": "5c1d0d57-1c35-4bd7-b0b8-9b0d1c6f2f11",
            "finalizers": ["deployplane.io/finalizer"],
        },
        "spec": {
            "source": "external_docker",
            "sourceConfig": {"listenerRef": {"name": "dev-cluster"}},
            "sourceRevisionConfig": {"imageUri": "registry.example.com/acme/support-bot:1.0.0"},
        },
    }
    if status is not None:
        obj["status"] = status
    return obj


def _status(gen: int, conditions: list[dict[str, Any]], revision: str) -> dict[str, Any]:
    return {
        "observedGeneration": gen,
        "deploymentId": DEPLOYMENT_ID,
        "latestRevisionId": REVISION_ID,
        "activeRevisionId": REVISION_ID if revision == "DEPLOYED" else None,
        "deploymentStatus": "READY",
        "imageVersion": "0.4.1",
        "revision": {
            "id": REVISION_ID,
            "status": revision,
            "imageUri": "registry.example.com/acme/support-bot:1.0.0",
        },
        "conditions": conditions,
    }


@dataclass(frozen=True)
class Case:
    obj: dict[str, Any]
    want: str
    message_has: str = ""


IN_PROGRESS = "Revision 0b7d7e0e is BUILDING"
INVALID = "sourceConfig.listenerId: no listener with this id in the workspace"

CASES: dict[str, Case] = {
    "fresh object without status is Progressing": Case(
        _agentdeployment(1), "Progressing", "generation 1"
    ),
    "reconciling a revision is Progressing": Case(
        _agentdeployment(
            1,
            _status(
                1,
                _conditions(
                    1,
                    ready=(FALSE, ADReason.REVISION_IN_PROGRESS, IN_PROGRESS),
                    synced=(TRUE, Reason.RECONCILE_SUCCESS, ""),
                    reconciling=(TRUE, ADReason.REVISION_IN_PROGRESS, IN_PROGRESS),
                    stalled=OK,
                ),
                "BUILDING",
            ),
        ),
        "Progressing",
        "BUILDING",
    ),
    "Ready for the current generation is Healthy": Case(
        _agentdeployment(
            2,
            _status(
                2,
                _conditions(
                    2,
                    ready=(TRUE, ADReason.DEPLOYED, "Revision 0b7d7e0e is deployed"),
                    synced=(TRUE, Reason.RECONCILE_SUCCESS, ""),
                    reconciling=OK,
                    stalled=OK,
                ),
                "DEPLOYED",
            ),
        ),
        "Healthy",
        "Deployed",
    ),
    "Ready for an older generation is Progressing": Case(
        # The spec was edited (generation 3); the operator has not looked yet.
        _agentdeployment(
            3,
            _status(
                2,
                _conditions(
                    2,
                    ready=(TRUE, ADReason.DEPLOYED, "Revision 0b7d7e0e is deployed"),
                    synced=(TRUE, Reason.RECONCILE_SUCCESS, ""),
                    reconciling=OK,
                    stalled=OK,
                ),
                "DEPLOYED",
            ),
        ),
        "Progressing",
        "generation 3",
    ),
    "Ready condition older than the status is Progressing": Case(
        # status.observedGeneration is current but the Ready condition itself is stale.
        _agentdeployment(
            3,
            {
                **_status(3, [], "DEPLOYED"),
                "conditions": [
                    *_conditions(
                        2,
                        ready=(TRUE, ADReason.DEPLOYED, "deployed"),
                        synced=(TRUE, Reason.RECONCILE_SUCCESS, ""),
                        reconciling=OK,
                        stalled=OK,
                    )[:1],
                    *_conditions(
                        3,
                        ready=(TRUE, ADReason.DEPLOYED, "deployed"),
                        synced=(TRUE, Reason.RECONCILE_SUCCESS, ""),
                        reconciling=OK,
                        stalled=OK,
                    )[1:],
                ],
            },
        ),
        "Progressing",
        "earlier generation",
    ),
    "Stalled is Degraded with its message": Case(
        _agentdeployment(
            1,
            _status(
                1,
                _conditions(
                    1,
                    ready=(FALSE, ADReason.BUILD_FAILED, "Revision 0b7d7e0e failed: BUILD_FAILED"),
                    synced=(TRUE, Reason.RECONCILE_SUCCESS, ""),
                    reconciling=OK,
                    stalled=(TRUE, ADReason.BUILD_FAILED, "Revision 0b7d7e0e failed: BUILD_FAILED"),
                ),
                "BUILD_FAILED",
            ),
        ),
        "Degraded",
        "BuildFailed: Revision 0b7d7e0e failed: BUILD_FAILED",
    ),
    "control plane unavailable is Progressing": Case(
        _agentdeployment(
            1,
            _status(
                1,
                _conditions(
                    1,
                    ready=(TRUE, ADReason.DEPLOYED, "Revision 0b7d7e0e is deployed"),
                    synced=(FALSE, Reason.CONTROL_PLANE_UNAVAILABLE, "503 Service Unavailable"),
                    reconciling=(TRUE, Reason.CONTROL_PLANE_UNAVAILABLE, "503 Service Unavailable"),
                    stalled=OK,
                ),
                "DEPLOYED",
            ),
        ),
        "Progressing",
        "ControlPlaneUnavailable",
    ),
    "Synced False InvalidSpec is Degraded": Case(
        _agentdeployment(
            1,
            _status(
                1,
                _conditions(
                    1,
                    ready=(UNKNOWN, Reason.INVALID_SPEC, INVALID),
                    synced=(FALSE, Reason.INVALID_SPEC, INVALID),
                    reconciling=OK,
                    stalled=OK,  # even without Stalled, a terminal Synced reason degrades
                ),
                "DEPLOYED",
            ),
        ),
        "Degraded",
        INVALID,
    ),
    "Synced False on a *Failed reason is Degraded": Case(
        _agentdeployment(
            1,
            _status(
                1,
                _conditions(
                    1,
                    ready=(FALSE, ADReason.DEPLOY_FAILED, "deploy failed"),
                    synced=(FALSE, ADReason.DEPLOY_FAILED, "deploy failed"),
                    reconciling=OK,
                    stalled=OK,
                ),
                "DEPLOY_FAILED",
            ),
        ),
        "Degraded",
        "DeployFailed",
    ),
    "missing dependency is Progressing": Case(
        _agentdeployment(
            1,
            _status(
                1,
                _conditions(
                    1,
                    ready=(UNKNOWN, Reason.DEPENDENCY_NOT_READY, "Secret llm-keys not found"),
                    synced=(FALSE, Reason.DEPENDENCY_NOT_READY, "Secret llm-keys not found"),
                    reconciling=(TRUE, Reason.DEPENDENCY_NOT_READY, "Secret llm-keys not found"),
                    stalled=OK,
                ),
                "DEPLOYED",
            ),
        ),
        "Progressing",
        "Secret llm-keys not found",
    ),
}


@pytest.mark.parametrize("name", list(CASES))
def test_health_of_operator_written_status(name: str) -> None:
    case = CASES[name]
    health = argocd_health(case.obj)
    assert health.status == case.want, f"{name}: {health}"
    assert case.message_has in health.message, f"{name}: {health}"


def test_paused_resource_is_suspended() -> None:
    obj = _agentdeployment(1)
    obj["metadata"]["annotations"] = {"deployplane.io/paused": "true"}
    assert argocd_health(obj).status == "Suspended"


def test_resource_being_deleted_is_progressing_even_when_paused() -> None:
    obj = _agentdeployment(1)
    obj["metadata"]["deletionTimestamp"] = NOW
    obj["metadata"]["annotations"] = {"deployplane.io/paused": "true"}
    assert argocd_health(obj) == ("Progressing", "Pending deletion")


def test_listener_ready_is_healthy() -> None:
    obj = {
        "apiVersion": "deployplane.io/v1alpha1",
        "kind": "Listener",
        "metadata": {"name": "dev-cluster", "namespace": "agents", "generation": 1},
        "spec": {"computeType": "k8s", "computeId": "dev-cluster"},
        "status": {
            "observedGeneration": 1,
            "listenerId": "9d4c6a1e-4b3f-4f8e-8a47-3b3c5a2e1f00",
            "conditions": _conditions(
                1,
                ready=(TRUE, Reason.AVAILABLE, ""),
                synced=(TRUE, Reason.RECONCILE_SUCCESS, ""),
                reconciling=OK,
                stalled=OK,
            ),
        },
    }
    assert argocd_health(obj) == ("Healthy", "Available")


# ---------------------------------------------- statuses composed by the reconciler


def _composed(
    verdict: _Verdict, previous: dict[str, Any] | None = None, gen: int = 4
) -> dict[str, Any]:
    return _agentdeployment(gen, _compose(previous or {}, gen, verdict))


def _error_verdict(exc: errors.ControlPlaneError) -> _Verdict:
    reason, terminal = classify(exc)
    return _Verdict(State.STALLED if terminal else State.RETRYING, False, reason, str(exc))


def _ready_status() -> dict[str, Any]:
    return _compose({}, 4, _Verdict(State.READY, True, ADReason.DEPLOYED, "deployed"))


COMPOSED: dict[str, tuple[_Verdict, dict[str, Any] | None, str]] = {
    "deployed": (_Verdict(State.READY, True, ADReason.DEPLOYED, "deployed"), None, "Healthy"),
    "revision in progress": (
        _Verdict(State.PROGRESSING, True, ADReason.REVISION_IN_PROGRESS, "building"),
        None,
        "Progressing",
    ),
    "revision failed": (
        _Verdict(State.STALLED, True, ADReason.BUILD_FAILED, "failed"),
        None,
        "Degraded",
    ),
    "revision skipped": (
        _Verdict(State.STALLED, True, ADReason.REVISION_SKIPPED, "skipped"),
        None,
        "Degraded",
    ),
    "invalid spec": (_error_verdict(errors.Invalid("bad field")), None, "Degraded"),
    "conflict": (_error_verdict(errors.Conflict("name taken")), None, "Degraded"),
    "not found": (_error_verdict(errors.NotFound("no such deployment")), None, "Degraded"),
    "unauthorized": (_error_verdict(errors.Unauthorized("bad key")), None, "Degraded"),
    "forbidden": (_error_verdict(errors.Forbidden("other workspace")), None, "Degraded"),
    "unavailable after Ready": (
        _error_verdict(errors.Unavailable("503")),
        _ready_status(),
        "Progressing",
    ),
    "rate limited after Ready": (
        _error_verdict(errors.RateLimited("429")),
        _ready_status(),
        "Progressing",
    ),
    "dependency not ready": (
        _Verdict(State.RETRYING, False, Reason.DEPENDENCY_NOT_READY, "Secret llm-keys not found"),
        None,
        "Progressing",
    ),
    "a change awaiting approval after Ready": (
        _Verdict.awaiting_approval("generation 4 waits for approval", None),
        _ready_status(),
        "Suspended",
    ),
    "a create awaiting approval": (
        _Verdict.awaiting_approval("generation 4 waits for approval", None),
        None,
        "Suspended",
    ),
}


@pytest.mark.parametrize("name", list(COMPOSED))
def test_health_of_status_composed_by_the_reconciler(name: str) -> None:
    verdict, previous, want = COMPOSED[name]
    health = argocd_health(_composed(verdict, previous))
    assert health.status == want, f"{name}: {health}"


def test_awaiting_approval_is_suspended_only_for_the_current_generation() -> None:
    waiting = _compose(_ready_status(), 4, _Verdict.awaiting_approval("waits", None))
    assert argocd_health(_agentdeployment(4, waiting)) == (
        "Suspended",
        "AwaitingApproval: waits",
    )
    # A newer edit the operator has not seen yet: its own change is not known yet.
    assert argocd_health(_agentdeployment(5, waiting)).status == "Progressing"


def test_recovered_after_outage_is_healthy_again() -> None:
    outage = _compose(_ready_status(), 4, _error_verdict(errors.Unavailable("503")))
    recovered = _compose(outage, 4, _Verdict(State.READY, True, ADReason.DEPLOYED, "deployed"))
    assert argocd_health(_agentdeployment(4, recovered)).status == "Healthy"
