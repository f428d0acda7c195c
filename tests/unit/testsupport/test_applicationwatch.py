"""The GitOps tier's reading of Argo CD's operations (tests/support/applicationwatch.py)
from versions of an Application written as Argo CD v3.5.3's application-controller
writes them (controller/appcontroller.go, `processRequestedAppOperation`): a sync whose
attempt fails, retried at the newest commit, and the self-heal that can follow at once."""

from __future__ import annotations

from typing import Any

from tests.support.applicationwatch import operations_of

SYNC = {"initiatedBy": {"automated": True}, "sync": {"revision": "aaa", "prune": True}}
HEAL = {
    "initiatedBy": {"automated": True},
    "sync": {"revision": "bbb", "resources": [{"kind": "AgentDeployment", "name": "bot"}]},
}
REFUSED = {"kind": "AgentDeployment", "name": "bot", "status": "SyncFailed", "message": "no"}


def version(operation: dict[str, Any] | None, state: dict[str, Any] | None) -> dict[str, Any]:
    status: dict[str, Any] = {"sync": {"status": "OutOfSync"}}
    if state is not None:
        status["operationState"] = state
    return {"metadata": {"resourceVersion": "1"}, "operation": operation, "status": status}


def state(phase: str, revision: str | None = None, **more: Any) -> dict[str, Any]:
    written: dict[str, Any] = {"operation": SYNC, "phase": phase, "startedAt": "T0", **more}
    if revision is not None:
        written["syncResult"] = {"revision": revision, "resources": []}
    return written


FAILED = state("Running", "aaa", finishedAt="T1", retryCount=1)
FAILED["syncResult"]["resources"] = [REFUSED]
RETRYING = state("Running", retryCount=1, message="Retrying operation with latest revisions")
SUCCEEDED = state("Succeeded", "bbb", finishedAt="T2", retryCount=1)
HEALED = {
    "operation": HEAL,
    "phase": "Succeeded",
    "startedAt": "T2",
    "syncResult": {"revision": "bbb"},
}


def test_a_retried_sync_then_a_self_heal_are_two_operations_each_with_its_own_states() -> None:
    versions = [
        version(None, None),
        version(SYNC, None),
        version(SYNC, state("Running")),
        version(SYNC, state("Running", "aaa")),
        version(SYNC, FAILED),
        version(SYNC, FAILED),  # a comparison's write: the state repeated
        version(SYNC, RETRYING),
        version(SYNC, state("Running", "bbb", retryCount=1)),
        version(None, SUCCEEDED),
        version(HEAL, SUCCEEDED),  # the self-heal asked, its state not written yet
        version(HEAL, {**HEALED, "phase": "Running", "syncResult": None}),
        version(None, HEALED),
    ]
    sync, heal = operations_of(versions)

    assert sync.done
    assert sync.automated
    assert sync.resources == set()
    phases = [(s.phase, s.revision, s.retry_count) for s in sync.states]
    assert phases == [
        ("Running", None, 0),
        ("Running", "aaa", 0),
        ("Running", "aaa", 1),
        ("Running", None, 1),  # the retry in flight: no result yet
        ("Running", "bbb", 1),
        ("Succeeded", "bbb", 1),
    ]
    failed = [s for s in sync.states if s.failed_awaiting_retry]
    assert [s.raw for s in failed] == [FAILED]
    assert failed[0].resource_result("AgentDeployment", "bot") == REFUSED
    assert sync.final is not None
    assert sync.final.raw == SUCCEEDED

    assert heal.done
    assert heal.automated
    assert heal.resources == {("AgentDeployment", "bot")}
    assert [s.phase for s in heal.states] == ["Running", "Succeeded"]
    assert heal.started_at == "T2"


def test_an_operation_still_running_has_no_final_state() -> None:
    (running,) = operations_of([version(SYNC, state("Running")), version(SYNC, FAILED)])
    assert not running.done
    assert running.final is None
    assert running.states[-1].failed_awaiting_retry


def test_a_state_written_before_the_watch_began_opens_an_operation_of_its_own() -> None:
    (earlier,) = operations_of([version(None, SUCCEEDED)])
    assert earlier.done
    assert earlier.automated
    assert [s.phase for s in earlier.states] == ["Succeeded"]
