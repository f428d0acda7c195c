"""The chart's Argo CD health check (charts/deployplane/argocd/health.lua), judged by
Argo CD's own code: every row of the health table (docs/gitops.md), for each of the
three kinds, on a status the reconciler's own `compose_outcome` writes, given to the
`argocd` binary `make gitops-tools` builds (`argocd admin settings resource-overrides
health`, offline; tests/support/argocd.py). Skipped without the binary, failed so under
CI=true or `make test`.

The same rows first go through `lua_precheck` (the script in a Lua 5.1 with only what
Argo CD's VM opens): a quick look that needs no binary, never the verdict.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import pytest
from tests.support.argocd import argocd_health_all, lua_precheck

from deployplane.api import errors
from deployplane.devcluster.gitops.argocd import HEALTH_LUA
from deployplane.externals.agentdeployment import AgentDeploymentReason as ADReason
from deployplane.externals.errors import classify
from deployplane.kinds.agentdeployment.status import AgentDeploymentStatus
from deployplane.kinds.controlplaneconnection.status import ControlPlaneConnectionStatus
from deployplane.kinds.listener.status import ListenerStatus
from deployplane.reconcile import outputs
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
from deployplane.reconcile.status import ResourceStatus, to_kube

NOW = "2026-11-22T00:40:00Z"
GEN = 4
STATUS_MODELS: dict[str, type[ResourceStatus]] = {
    "AgentDeployment": AgentDeploymentStatus,
    "Listener": ListenerStatus,
    "ControlPlaneConnection": ControlPlaneConnectionStatus,
}
SPECS: dict[str, dict[str, Any]] = {
    "AgentDeployment": {
        "source": "external_docker",
        "sourceConfig": {"listenerRef": {"name": "dev-cluster"}},
        "sourceRevisionConfig": {"imageUri": "registry.example.com/acme/support-bot:1.0.0"},
    },
    "Listener": {"computeType": "k8s", "computeId": "dev-cluster"},
    "ControlPlaneConnection": {
        "url": "http://127.0.0.1:8080",
        "apiKeySecretRef": {"name": "control-plane-key", "key": "apiKey"},
    },
}
KINDS = tuple(STATUS_MODELS)


def _compose(kind: str, previous: dict[str, Any], verdict: Verdict[Any]) -> dict[str, Any]:
    """`compose_outcome` over a status as Kubernetes holds it, and back."""
    status = STATUS_MODELS[kind].model_validate(previous)
    return to_kube(compose_outcome(status, GEN, verdict, 0, [], Schedule()).status)


def _object(kind: str, status: dict[str, Any] | None, generation: int = GEN) -> dict[str, Any]:
    obj: dict[str, Any] = {
        "apiVersion": "deployplane.io/v1alpha1",
        "kind": kind,
        "metadata": {
            "name": "example",
            "namespace": "agents",
            "generation": generation,
            "uid": "5c1d0d57-1c35-4bd7-b0b8-9b0d1c6f2f11",
            "finalizers": ["deployplane.io/finalizer"],
        },
        "spec": SPECS[kind],
    }
    if status is not None:
        obj["status"] = status
    return obj


def _error(exc: errors.ControlPlaneError) -> Verdict[Any]:
    reason, terminal = classify(exc)
    return Verdict(State.STALLED if terminal else State.RETRYING, False, reason, str(exc))


def _ready_verdict(kind: str) -> Verdict[Any]:
    if kind == "AgentDeployment":
        return Verdict(State.READY, True, ADReason.DEPLOYED, "Revision 0b7d7e0e is deployed")
    return Verdict(State.READY, True, Reason.AVAILABLE, "")


def _ready(kind: str) -> dict[str, Any]:
    return _compose(kind, {}, _ready_verdict(kind))


DEPENDENCY = {
    "AgentDeployment": "Secret llm-keys not found",
    "Listener": "ControlPlaneConnection default is not Ready",
    "ControlPlaneConnection": "API key Secret control-plane-key not found",
}
# A terminal refusal of each kind (Stalled=True with Synced=False).
REFUSED: dict[str, errors.ControlPlaneError] = {
    "AgentDeployment": errors.Invalid("body.source_revision_config.image_uri: not valid"),
    "Listener": errors.Conflict("compute_id dev-cluster is taken"),
    "ControlPlaneConnection": errors.Forbidden("other workspace"),
}


@dataclass(frozen=True)
class Row:
    obj: dict[str, Any]
    health: str
    message_has: str = ""


UNAVAILABLE = _error(errors.Unavailable("503 Service Unavailable"))
# Held in its deletion (a resource still uses it, or the control plane cannot delete
# yet): what the operator says is in Ready; Argo CD's own rule comes first.
DELETION_BLOCKED: Verdict[Any] = Verdict(
    State.RETRYING, False, Reason.DELETION_BLOCKED, "the control plane cannot delete yet"
)


def _with_meta(obj: dict[str, Any], **meta: Any) -> dict[str, Any]:
    obj["metadata"].update(meta)
    return obj


def _rows_of(kind: str) -> dict[str, Row]:
    """The health table's rows for one kind, each on the status the operator writes."""
    ready = _ready(kind)
    failed = (
        Verdict(State.STALLED, True, ADReason.BUILD_FAILED, "Revision 0b7d7e0e: BUILD_FAILED")
        if kind == "AgentDeployment"
        else _error(errors.Unauthorized("the control plane refused the API key"))
    )
    paused = {"deployplane.io/paused": "true"}
    deleting = _with_meta(_object(kind, ready), deletionTimestamp=NOW)
    deleting_paused = _with_meta(_object(kind, ready), deletionTimestamp=NOW, annotations=paused)
    blocked = _object(kind, _compose(kind, ready, DELETION_BLOCKED))
    blocked = _with_meta(blocked, deletionTimestamp=NOW)
    unavailable = UNAVAILABLE
    recovered = _compose(kind, _compose(kind, ready, unavailable), _ready_verdict(kind))
    dependency: Verdict[Any] = Verdict(
        State.RETRYING, False, Reason.DEPENDENCY_NOT_READY, DEPENDENCY[kind]
    )
    ready_message = "Deployed" if kind == "AgentDeployment" else "Available"
    return {
        "ready": Row(_object(kind, ready), "Healthy", ready_message),
        "waiting on the control plane, never Ready": Row(
            _object(kind, _compose(kind, {}, unavailable)), "Progressing", "503"
        ),
        "waiting on the control plane after Ready": Row(
            _object(kind, _compose(kind, ready, unavailable)),
            "Progressing",
            "ControlPlaneUnavailable",
        ),
        "rate limited after Ready": Row(
            _object(kind, _compose(kind, ready, _error(errors.RateLimited("429")))),
            "Progressing",
            "RateLimited",
        ),
        "ready again after the control plane came back": Row(_object(kind, recovered), "Healthy"),
        "waiting on a dependency": Row(
            _object(kind, _compose(kind, {}, dependency)), "Progressing", DEPENDENCY[kind]
        ),
        "failed": Row(_object(kind, _compose(kind, {}, failed)), "Degraded", failed.reason),
        "stalled": Row(
            _object(kind, _compose(kind, ready, _error(REFUSED[kind]))),
            "Degraded",
            str(REFUSED[kind]),
        ),
        "paused": Row(_with_meta(_object(kind, ready), annotations=paused), "Suspended", "paused"),
        "deleting": Row(deleting, "Progressing", "Pending deletion"),
        "deleting while paused": Row(deleting_paused, "Progressing", "Pending deletion"),
        "deleting, held": Row(blocked, "Progressing", "Pending deletion"),
        "generation not yet observed": Row(
            _object(kind, ready, generation=GEN + 1), "Progressing", f"generation {GEN + 1}"
        ),
        "no status yet": Row(_object(kind, None, generation=1), "Progressing", "generation 1"),
    }


def _agentdeployment_rows() -> dict[str, Row]:
    """The rows only an AgentDeployment reaches: its revisions' life."""
    kind = "AgentDeployment"

    def composed(verdict: Verdict[Any]) -> dict[str, Any]:
        return _object(kind, _compose(kind, {}, verdict))

    building = "Revision 0b7d7e0e is BUILDING"
    awaiting: Verdict[Any] = Verdict.awaiting_approval("generation 4 waits for approval", None)
    ready_then_stale = _ready(kind)
    # status.observedGeneration is current but the Ready condition itself is older.
    ready_then_stale["conditions"][0]["observedGeneration"] = GEN - 1
    return {
        "a revision building": Row(
            composed(Verdict(State.PROGRESSING, True, ADReason.REVISION_IN_PROGRESS, building)),
            "Progressing",
            building,
        ),
        "a revision that failed to deploy": Row(
            composed(Verdict(State.STALLED, True, ADReason.DEPLOY_FAILED, "deploy failed")),
            "Degraded",
            "DeployFailed: deploy failed",
        ),
        "a revision skipped": Row(
            composed(Verdict(State.STALLED, True, ADReason.REVISION_SKIPPED, "skipped")),
            "Degraded",
            "RevisionSkipped",
        ),
        "Ready condition older than the status": Row(
            _object(kind, ready_then_stale), "Progressing", "earlier generation"
        ),
        # updatePolicy Manual: a change held until `deployplane approve` sends it.
        "a create awaiting approval": Row(composed(awaiting), "Suspended", "AwaitingApproval"),
        "a change awaiting approval after Ready": Row(
            _object(kind, _compose(kind, _ready(kind), awaiting)),
            "Suspended",
            "AwaitingApproval: generation 4 waits for approval",
        ),
        "a change awaiting approval, then a newer edit not yet observed": Row(
            _object(kind, _compose(kind, _ready(kind), awaiting), generation=GEN + 1),
            "Progressing",
            f"generation {GEN + 1}",
        ),
    }


def _synced_false(reason: str) -> dict[str, Any]:
    """Synced=False for `reason` while retrying (Reconciling=True, no Stalled): the
    reason alone decides."""
    conditions = [
        set_condition([], type_, status, reason, f"{reason} happened", GEN, now=NOW)
        for type_, status in (
            (ConditionType.READY, UNKNOWN),
            (ConditionType.SYNCED, FALSE),
            (ConditionType.RECONCILING, TRUE),
        )
    ]
    dumped = [c.model_dump(mode="json", exclude_none=True) for c in conditions]
    return _object("AgentDeployment", {"observedGeneration": GEN, "conditions": dumped})


def synced_false_table() -> dict[str, str]:
    """health.lua's SYNCED_FALSE rows: reason -> health."""
    body = re.search(r"local SYNCED_FALSE = \{(.*?)\n\}", HEALTH_LUA.read_text(), re.S)
    assert body is not None, "health.lua has no SYNCED_FALSE table"
    return dict(re.findall(r"^\s*(\w+) = \"(\w+)\",", body.group(1), re.M))


def _synced_false_rows() -> dict[str, Row]:
    rows = {
        f"Synced=False {reason}": Row(_synced_false(reason), health, f"{reason} happened")
        for reason, health in synced_false_table().items()
    }
    # Any other reason is retried by the operator.
    for reason in (outputs.CONFIG_MAP_NOT_OWNED, Reason.CONTROL_PLANE_UNAVAILABLE):
        rows[f"Synced=False {reason}"] = Row(_synced_false(reason), "Progressing", reason)
    return rows


ROWS: dict[str, Row] = {
    **{f"{kind}: {state}": row for kind in KINDS for state, row in _rows_of(kind).items()},
    **{f"AgentDeployment: {state}": row for state, row in _agentdeployment_rows().items()},
    **_synced_false_rows(),
}
# Argo CD's own rule, before any script: an object being deleted is Progressing.
ARGOCD_ONLY = frozenset(name for name in ROWS if "deleting" in name)


@pytest.fixture(scope="module")
def judged() -> dict[str, Any]:
    """Every row judged by the argocd binary in one batch."""
    return dict(zip(ROWS, argocd_health_all([row.obj for row in ROWS.values()]), strict=True))


@pytest.mark.parametrize("name", list(ROWS))
def test_argocd_gives_the_documented_health(name: str, judged: dict[str, Any]) -> None:
    row, health = ROWS[name], judged[name]
    assert health.status == row.health, f"{name}: {health}"
    assert row.message_has in health.message, f"{name}: {health}"


@pytest.mark.parametrize("name", list(ROWS))
def test_precheck_in_argocds_libraries(name: str) -> None:
    """Runs with nothing but what Argo CD's VM opens (no `string`, no `math`)."""
    row = ROWS[name]
    health = lua_precheck(row.obj)
    assert health.status == row.health, f"{name}: {health}"
    assert row.message_has in health.message, f"{name}: {health}"


def test_every_terminal_or_failed_reason_of_the_operator_has_a_row() -> None:
    """A reason the operator gives with Synced=False that only a change fixes (a
    terminal control-plane error) or that says something failed is Degraded, by a row
    of its own (the script cannot match a suffix: Argo CD's VM has no `string`)."""
    terminal = {classify(exc)[0] for exc in REFUSED.values()} | {
        classify(errors.NotFound("x"))[0],
        classify(errors.Unauthorized("x"))[0],
    }
    reasons = [*Reason, *ADReason, outputs.CONFIG_MAP_NOT_OWNED, outputs.CONFIG_MAP_WRITE_FAILED]
    failed = {str(r) for r in reasons if str(r).endswith("Failed")}
    table = synced_false_table()
    for reason in sorted(terminal | failed):
        assert table.get(reason) == "Degraded", reason
    assert table.get(Reason.AWAITING_APPROVAL) == "Suspended"


# A check written for a full Lua 5.1, as the chart's once was.
WITH_STRING = """
local hs = {status = "Healthy", message = ""}
if string.len(obj.metadata.name) > 0 then hs.message = obj.metadata.name end
return hs
"""


def test_the_judge_fails_a_script_that_uses_what_argocd_does_not_open() -> None:
    """Argo CD's own error, as the live Application showed it: the judge cannot be
    fooled by a Lua that has more than Argo CD's VM."""
    row = ROWS["AgentDeployment: waiting on a dependency"]
    with pytest.raises(AssertionError, match="attempt to index a non-table object"):
        argocd_health_all([row.obj], script=WITH_STRING)
    with pytest.raises(Exception, match="string"):
        lua_precheck(row.obj, WITH_STRING)
