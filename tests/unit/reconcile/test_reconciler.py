"""The generic reconciler against a function-adapter fake, as tables of case -> want.

Every case runs one `Reconciler.reconcile` pass and compares one summary dict (the
conditions, which lastTransitionTimes moved, the calls in order with the status writes
interleaved, chosen status fields, the requeue, settled, the events) with the wanted
one, so a failure shows a readable dict diff. No emulator, no Kubernetes.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field, replace
from typing import Any

import pytest
from tests.support.fakeexternal import (
    DEP_ID,
    Call,
    ConnecterFns,
    ExternalFns,
    FakeSpec,
    FakeStatus,
    fresh,
    observed,
    raises,
    returns,
)

from deployplane.api import errors
from deployplane.externals.agentdeployment import AgentDeploymentReason as ADReason
from deployplane.externals.errors import classify
from deployplane.kinds.common import DeletionPolicy
from deployplane.reconcile.conditions import Reason
from deployplane.reconcile.decision import observe_only
from deployplane.reconcile.errors import ExternalError
from deployplane.reconcile.external import ABSENT, DependencyNotReady, Managed, Phase
from deployplane.reconcile.marker import CreatePending
from deployplane.reconcile.outcome import Outcome
from deployplane.reconcile.reconciler import Preview, Reconciler
from deployplane.reconcile.schedule import Schedule
from deployplane.reconcile.status import to_kube

OLD = "2020-01-01T00:00:00Z"
ABSENT_FIELD = "<absent>"
ALL = ["Ready", "Reconciling", "Stalled", "Synced"]
CREATE_PENDING = "createPending"
"""A case's `status` with this key stands for a resource whose object carries the
marker (`Managed.create_pending`: the key and resourceVersion it holds), and a wanted
status with it absent proves the marker never shows in the status."""
TIMING = Schedule()  # poll 2 s -> 30 s, retry 2 s -> 120 s, resync 600 s

MARKER_VALUE = {"key": "agent", "resourceVersion": "7"}
MARKER = {CREATE_PENDING: MARKER_VALUE}
EARLIER_MARKER = {CREATE_PENDING: {"key": "agnet", "resourceVersion": "6"}}
"""The marker of a create under a name the spec has corrected since (a typo)."""
EARLIER_CONFLICT = (
    "deployment dep-old was created as 'agnet' for this resource before its id was "
    "recorded, and the spec now says 'agent': set it back to 'agnet' to adopt it, or "
    "delete deployment dep-old on the control plane to create a new one"
)

OK = "True/ReconcileSuccess"
IDLE = "absent"
"""Reconciling or Stalled when all is normal: kstatus's abnormal-true conditions are
absent then, not False."""
EARLIER_IDLE = "False/ReconcileSuccess"
"""How versions before the abnormal-true change wrote an idle Reconciling or Stalled."""


def conditions(
    ready: str, synced: str = OK, reconciling: str = IDLE, stalled: str = IDLE, gen: int = 1
) -> list[dict[str, Any]]:
    """Conditions as a previous pass wrote them, all with an old lastTransitionTime."""
    out = []
    for type_, value in (
        ("Ready", ready),
        ("Synced", synced),
        ("Reconciling", reconciling),
        ("Stalled", stalled),
    ):
        if value == IDLE:
            continue
        status, reason = value.split("/")
        out.append(
            {
                "type": type_,
                "status": status,
                "reason": reason,
                "message": "",
                "lastTransitionTime": OLD,
                "observedGeneration": gen,
            }
        )
    return out


SETTLED: dict[str, Any] = {
    "deploymentId": DEP_ID,
    "observedGeneration": 1,
    "conditions": conditions("True/Deployed"),
}
POLLING: dict[str, Any] = {
    "deploymentId": DEP_ID,
    "observedGeneration": 1,
    "conditions": conditions("False/RevisionInProgress", reconciling="True/RevisionInProgress"),
}
JUST_CREATED: dict[str, Any] = {
    "deploymentId": DEP_ID,
    "observedGeneration": 1,
    "conditions": conditions("False/Creating", reconciling="True/Creating"),
}

PROGRESSING = observed(phase=Phase.PROGRESSING, reason=ADReason.REVISION_IN_PROGRESS)
BUILD_FAILED_MSG = (
    "Revision rev-1 ended BUILD_FAILED; the next change of the spec rolls a new revision"
)

UNAVAILABLE = errors.Unavailable("GET /v2/deployments/{deployment_id}: 503 Service Unavailable")
CONFLICT = errors.Conflict("POST /v2/deployments: 409 Conflict: name agent is taken")
NOT_READY = DependencyNotReady("Secret llm-keys has no key openai")
UNAUTHORIZED_MSG = "GET /v2/deployments/{deployment_id}: 401 Unauthorized"
FORBIDDEN_MSG = "GET /v2/deployments/{deployment_id}: 403 Forbidden"
INVALID_MSG = "PATCH /v2/deployments/{deployment_id}: 422 Unprocessable Entity: bad image"
# The published contract answers a refused create with 400 {"detail": one sentence}.
REFUSED_MSG = "POST /v2/deployments: 400 Bad Request: A deployment with this name already exists."
REFUSED = errors.Invalid(REFUSED_MSG, status_code=400)
TAKEN_MSG = f"{REFUSED_MSG} ('agent' is already taken on the control plane)"
CREATE_422 = errors.Invalid("POST /v2/deployments: 422 Unprocessable Entity: bad", status_code=422)

CONNECT: Call = ("connect",)
CREATE: Call = ("create",)
FIND: Call = ("find",)
FIND_EARLIER: Call = ("find", "agnet")
UPDATE: Call = ("update",)
WRITE_MARKER: Call = ("mark", MARKER_VALUE)
UNMARK: Call = ("unmark",)


def observe(external_id: str = DEP_ID, full: bool = True) -> Call:
    return ("observe", external_id, full)


@dataclass(frozen=True)
class Want:
    conditions: dict[str, str]
    """Condition type -> "status/reason"."""
    moved: list[str]
    """Condition types whose lastTransitionTime moved (the others kept theirs)."""
    calls: list[Call]
    requeue_after: float
    settled: bool
    events: list[tuple[str, str, str]] = field(default_factory=list)
    status: dict[str, Any] = field(default_factory=dict)
    """Status fields to check; ABSENT_FIELD when the field must not be there."""
    messages: dict[str, str] = field(default_factory=dict)
    """Condition type -> message, for the conditions whose message matters."""


@dataclass(frozen=True)
class Case:
    status: dict[str, Any]
    want: Want
    fns: dict[str, Any] = field(default_factory=dict)
    connect_error: BaseException | None = None
    generation: int = 1
    attempt: int = 0
    resync_due: bool = False
    spec: dict[str, Any] = field(default_factory=dict)
    approved: int | None = None
    """The generation the approval annotation names."""


def managed(
    status: dict[str, Any], generation: int = 1, approved: int | None = None, **spec: Any
) -> Managed[FakeSpec, FakeStatus]:
    status = dict(status)
    marker = status.pop(CREATE_PENDING, None)
    return Managed(
        namespace="team-a",
        name="agent",
        uid="uid-1",
        generation=generation,
        spec=FakeSpec(**spec),
        status=FakeStatus.model_validate(status),
        resource_version="7",
        create_pending=None
        if marker is None
        else CreatePending(marker["key"], marker["resourceVersion"]),
        approved_generation=approved,
    )


def summary(outcome: Outcome[FakeStatus], journal: list[Call], want: Want) -> dict[str, Any]:
    status = to_kube(outcome.status)
    conds = {c["type"]: c for c in status["conditions"]}
    return {
        "conditions": {t: f"{c['status']}/{c['reason']}" for t, c in conds.items()},
        "moved": sorted(t for t, c in conds.items() if c["lastTransitionTime"] != OLD),
        "calls": journal,
        "requeue_after": outcome.requeue_after,
        "settled": outcome.settled,
        "events": [(e.type, e.reason, e.message) for e in outcome.events],
        "status": {k: status.get(k, ABSENT_FIELD) for k in want.status},
        "messages": {t: conds[t]["message"] for t in want.messages},
    }


def wanted(want: Want) -> dict[str, Any]:
    return {
        "conditions": want.conditions,
        # Only a condition that is there has a lastTransitionTime that can move.
        "moved": sorted(t for t in want.moved if t in want.conditions),
        "calls": want.calls,
        "requeue_after": want.requeue_after,
        "settled": want.settled,
        "events": want.events,
        "status": want.status,
        "messages": want.messages,
    }


def conds(
    ready: str, synced: str = OK, reconciling: str = IDLE, stalled: str = IDLE
) -> dict[str, str]:
    every = {"Ready": ready, "Synced": synced, "Reconciling": reconciling, "Stalled": stalled}
    return {type_: value for type_, value in every.items() if value != IDLE}


def stalled_by(reason: str, message: str, *, moved: list[str], calls: list[Call]) -> Want:
    """What a terminal control-plane error looks like from a settled resource."""
    return Want(
        conditions=conds(f"False/{reason}", f"False/{reason}", IDLE, f"True/{reason}"),
        moved=moved,
        calls=calls,
        requeue_after=TIMING.resync,
        settled=True,
        events=[("Warning", reason, message)],
        messages={"Stalled": message, "Synced": message},
    )


CASES: dict[str, Case] = {
    # ------------------------------------------------------------------ create
    "no id: marker written before create; the id goes out with the first conditions": Case(
        status={},
        want=Want(
            conditions=conds("False/Creating", reconciling="True/Creating"),
            moved=ALL,
            calls=[CONNECT, WRITE_MARKER, CREATE],
            requeue_after=2.0,
            settled=False,
            events=[("Normal", "Created", "Created deployment dep-new")],
            status={
                "deploymentId": "dep-new",
                CREATE_PENDING: ABSENT_FIELD,
                "observedGeneration": 1,
            },
        ),
    ),
    "create fails retryably: the marker stays for the next pass to look up": Case(
        status={},
        fns={"create_fn": raises(UNAVAILABLE)},
        want=Want(
            conditions=conds(
                "Unknown/ControlPlaneUnavailable",
                "False/ControlPlaneUnavailable",
                "True/ControlPlaneUnavailable",
            ),
            moved=ALL,
            calls=[CONNECT, WRITE_MARKER, CREATE],
            requeue_after=2.0,
            settled=False,
            events=[("Warning", "ControlPlaneUnavailable", str(UNAVAILABLE))],
            status={CREATE_PENDING: ABSENT_FIELD, "deploymentId": ABSENT_FIELD},
        ),
    ),
    "no id, a dependency not ready: no marker, no create (a later pass must not adopt)": Case(
        status={},
        fns={"resolve_fn": raises(NOT_READY)},
        want=Want(
            conditions=conds(
                "Unknown/DependencyNotReady",
                "False/DependencyNotReady",
                "True/DependencyNotReady",
                IDLE,
            ),
            moved=ALL,
            calls=[CONNECT],
            requeue_after=2.0,
            settled=False,
            events=[("Warning", "DependencyNotReady", "Secret llm-keys has no key openai")],
            status={"deploymentId": ABSENT_FIELD},
        ),
    ),
    # ----------------------------------------------------------------- observe
    "id known, up to date: one full observe, no update, nothing changes": Case(
        status=SETTLED,
        want=Want(
            conditions=conds("True/Deployed"),
            moved=[],
            calls=[CONNECT, observe()],
            requeue_after=600.0,
            settled=True,
            status={"deploymentId": DEP_ID},
        ),
    ),
    "revision in progress, spec unchanged: poll only (full=False)": Case(
        status=POLLING,
        fns={"observe_fn": returns(PROGRESSING)},
        attempt=1,
        want=Want(
            conditions=conds("False/RevisionInProgress", reconciling="True/RevisionInProgress"),
            moved=[],
            calls=[CONNECT, observe(full=False)],
            requeue_after=3.0,
            settled=False,
        ),
    ),
    "polling: drift is left for the next full observation": Case(
        status=POLLING,
        fns={
            "observe_fn": returns(
                observed(
                    phase=Phase.PROGRESSING, reason=ADReason.REVISION_IN_PROGRESS, up_to_date=False
                )
            )
        },
        want=Want(
            conditions=conds("False/RevisionInProgress", reconciling="True/RevisionInProgress"),
            moved=[],
            calls=[CONNECT, observe(full=False)],
            requeue_after=2.0,
            settled=False,
        ),
    ),
    "polling but resync due: full observation": Case(
        status=POLLING,
        resync_due=True,
        fns={"observe_fn": returns(PROGRESSING)},
        want=Want(
            conditions=conds("False/RevisionInProgress", reconciling="True/RevisionInProgress"),
            moved=[],
            calls=[CONNECT, observe()],
            requeue_after=2.0,
            settled=False,
        ),
    ),
    "polling but the spec changed (new generation): full observation": Case(
        status=POLLING,
        generation=2,
        fns={"observe_fn": returns(PROGRESSING)},
        want=Want(
            conditions=conds("False/RevisionInProgress", reconciling="True/RevisionInProgress"),
            moved=[],
            calls=[CONNECT, observe()],
            requeue_after=2.0,
            settled=False,
            status={"observedGeneration": 2},
        ),
    ),
    "reason changes without a status flip: lastTransitionTime kept": Case(
        status=JUST_CREATED,
        fns={"observe_fn": returns(PROGRESSING)},
        want=Want(
            conditions=conds("False/RevisionInProgress", reconciling="True/RevisionInProgress"),
            moved=[],
            calls=[CONNECT, observe(full=False)],
            requeue_after=2.0,
            settled=False,
        ),
    ),
    "drifted on the control plane: update, DriftCorrected event naming the fields": Case(
        status=SETTLED,
        fns={
            "observe_fn": returns(
                observed(up_to_date=False, drift=("sourceRevisionConfig.imageUri",))
            ),
            "update_fn": returns(
                observed(
                    phase=Phase.PROGRESSING,
                    reason=ADReason.REVISION_IN_PROGRESS,
                    latestRevisionId="rev-2",
                )
            ),
        },
        want=Want(
            conditions=conds("False/RevisionInProgress", reconciling="True/RevisionInProgress"),
            moved=["Ready", "Reconciling"],
            calls=[CONNECT, observe(), UPDATE],
            requeue_after=2.0,
            settled=False,
            events=[
                (
                    "Normal",
                    "DriftCorrected",
                    "Corrected drift of sourceRevisionConfig.imageUri: changed on the control"
                    " plane",
                )
            ],
            status={"latestRevisionId": "rev-2"},
        ),
    ),
    "spec edited: update, Updated event applying the change to the fields": Case(
        status=SETTLED,
        generation=2,
        fns={
            "observe_fn": returns(
                observed(up_to_date=False, drift=("sourceRevisionConfig.imageUri",))
            ),
            "update_fn": returns(
                observed(
                    phase=Phase.PROGRESSING,
                    reason=ADReason.REVISION_IN_PROGRESS,
                    latestRevisionId="rev-2",
                )
            ),
        },
        want=Want(
            conditions=conds("False/RevisionInProgress", reconciling="True/RevisionInProgress"),
            moved=["Ready", "Reconciling"],
            calls=[CONNECT, observe(), UPDATE],
            requeue_after=2.0,
            settled=False,
            events=[("Normal", "Updated", "Applied the change to sourceRevisionConfig.imageUri")],
            status={"latestRevisionId": "rev-2"},
        ),
    ),
    "spec edited, its first PATCH failed (Synced=False at it): still the change, not drift": Case(
        status={
            **SETTLED,
            "observedGeneration": 2,
            "conditions": conditions(
                "True/Deployed", synced="False/ControlPlaneUnavailable", gen=2
            ),
        },
        generation=2,
        fns={
            "observe_fn": returns(
                observed(up_to_date=False, drift=("sourceRevisionConfig.imageUri",))
            ),
            "update_fn": returns(
                observed(
                    phase=Phase.PROGRESSING,
                    reason=ADReason.REVISION_IN_PROGRESS,
                    latestRevisionId="rev-2",
                )
            ),
        },
        want=Want(
            conditions=conds("False/RevisionInProgress", reconciling="True/RevisionInProgress"),
            moved=["Ready", "Reconciling", "Synced"],
            calls=[CONNECT, observe(), UPDATE],
            requeue_after=2.0,
            settled=False,
            events=[("Normal", "Updated", "Applied the change to sourceRevisionConfig.imageUri")],
            status={"latestRevisionId": "rev-2"},
        ),
    ),
    "PROGRESSING from settled: Ready False, Reconciling True, poll in 2 s": Case(
        status=SETTLED,
        fns={"observe_fn": returns(PROGRESSING)},
        want=Want(
            conditions=conds("False/RevisionInProgress", reconciling="True/RevisionInProgress"),
            moved=["Ready", "Reconciling"],
            calls=[CONNECT, observe()],
            requeue_after=2.0,
            settled=False,
        ),
    ),
    "FAILED phase while polling: Stalled with the phase reason, still Synced": Case(
        status=POLLING,
        fns={
            "observe_fn": returns(
                observed(phase=Phase.FAILED, reason=ADReason.BUILD_FAILED, message=BUILD_FAILED_MSG)
            )
        },
        want=Want(
            conditions=conds("False/BuildFailed", OK, IDLE, "True/BuildFailed"),
            moved=["Reconciling", "Stalled"],
            calls=[CONNECT, observe(full=False)],
            requeue_after=600.0,
            settled=True,
            events=[("Warning", "BuildFailed", BUILD_FAILED_MSG)],
            messages={"Ready": BUILD_FAILED_MSG, "Stalled": BUILD_FAILED_MSG},
        ),
    ),
    # ------------------------------------------------------------------- adopt
    "adopt id from spec, exists: Adopted, no create, no write": Case(
        status={},
        fns={"adopt_id": "dep-adopt"},
        want=Want(
            conditions=conds("True/Deployed"),
            moved=ALL,
            calls=[CONNECT, observe("dep-adopt")],
            requeue_after=600.0,
            settled=True,
            events=[
                ("Normal", "Adopted", "Adopted deployment dep-adopt"),
                ("Normal", "Deployed", "Ready"),
            ],
            status={"deploymentId": "dep-adopt"},
        ),
    ),
    "adopt id from spec, absent: Stalled NotFound, never created": Case(
        status={},
        fns={"adopt_id": "dep-adopt", "observe_fn": returns(ABSENT)},
        want=Want(
            conditions=conds("False/NotFound", "False/NotFound", IDLE, "True/NotFound"),
            moved=ALL,
            calls=[CONNECT, observe("dep-adopt")],
            requeue_after=600.0,
            settled=True,
            events=[
                (
                    "Warning",
                    "NotFound",
                    "deployment dep-adopt to adopt (spec) does not exist on the control plane",
                )
            ],
            status={"deploymentId": ABSENT_FIELD},
        ),
    ),
    "id known but gone: Warning, then created again": Case(
        status=SETTLED,
        fns={"observe_fn": returns(ABSENT)},
        want=Want(
            conditions=conds("False/Creating", reconciling="True/Creating"),
            moved=["Ready", "Reconciling"],
            calls=[
                CONNECT,
                observe(),
                ("write", {"deploymentId": None}),
                WRITE_MARKER,
                CREATE,
            ],
            requeue_after=2.0,
            settled=False,
            events=[
                (
                    "Warning",
                    "ExternalResourceGone",
                    "deployment dep-1 disappeared from the control plane; creating it again",
                ),
                ("Normal", "Created", "Created deployment dep-new"),
            ],
            status={"deploymentId": "dep-new"},
        ),
    ),
    # ------------------------------------------------------ crash-safe creation
    "create pending, find hit: adopted, no create": Case(
        status=MARKER,
        fns={"find_fn": returns("dep-found")},
        want=Want(
            conditions=conds("True/Deployed"),
            moved=ALL,
            calls=[CONNECT, FIND, observe("dep-found")],
            requeue_after=600.0,
            settled=True,
            events=[
                ("Normal", "Adopted", "Recovered deployment dep-found after restart"),
                ("Normal", "Deployed", "Ready"),
            ],
            status={"deploymentId": "dep-found", CREATE_PENDING: ABSENT_FIELD},
        ),
    ),
    "create pending, find hit, observe fails: the found id still goes out": Case(
        status=MARKER,
        fns={"find_fn": returns("dep-found"), "observe_fn": raises(UNAVAILABLE)},
        want=Want(
            conditions=conds(
                "Unknown/ControlPlaneUnavailable",
                "False/ControlPlaneUnavailable",
                "True/ControlPlaneUnavailable",
            ),
            moved=ALL,
            calls=[CONNECT, FIND, observe("dep-found")],
            requeue_after=2.0,
            settled=False,
            events=[
                ("Normal", "Adopted", "Recovered deployment dep-found after restart"),
                ("Warning", "ControlPlaneUnavailable", str(UNAVAILABLE)),
            ],
            status={"deploymentId": "dep-found", CREATE_PENDING: ABSENT_FIELD},
        ),
    ),
    "create pending, find miss: created": Case(
        status=MARKER,
        want=Want(
            conditions=conds("False/Creating", reconciling="True/Creating"),
            moved=ALL,
            calls=[CONNECT, FIND, WRITE_MARKER, CREATE],
            requeue_after=2.0,
            settled=False,
            events=[("Normal", "Created", "Created deployment dep-new")],
            status={"deploymentId": "dep-new", CREATE_PENDING: ABSENT_FIELD},
        ),
    ),
    "Conflict on create without a prior marker: Stalled Conflict, marker cleared": Case(
        status={},
        fns={"create_fn": raises(CONFLICT)},
        want=Want(
            conditions=conds("False/Conflict", "False/Conflict", IDLE, "True/Conflict"),
            moved=ALL,
            calls=[CONNECT, WRITE_MARKER, CREATE, UNMARK],
            requeue_after=600.0,
            settled=True,
            events=[("Warning", "Conflict", str(CONFLICT))],
            status={CREATE_PENDING: ABSENT_FIELD, "deploymentId": ABSENT_FIELD},
        ),
    ),
    "400 on create with a prior marker, find hit: our own create, adopted": Case(
        status=MARKER,
        fns={"create_fn": raises(REFUSED), "find_fn": returns(None, "dep-found")},
        want=Want(
            conditions=conds("True/Deployed"),
            moved=ALL,
            calls=[CONNECT, FIND, WRITE_MARKER, CREATE, FIND, observe("dep-found")],
            requeue_after=600.0,
            settled=True,
            events=[
                ("Normal", "Created", "Created deployment dep-found"),
                ("Normal", "Deployed", "Ready"),
            ],
            status={"deploymentId": "dep-found", CREATE_PENDING: ABSENT_FIELD},
        ),
    ),
    "400 on create, name taken by another (no marker): Stalled Conflict, service's words": Case(
        status={},
        fns={"create_fn": raises(REFUSED), "find_fn": returns("dep-other")},
        want=Want(
            conditions=conds("False/Conflict", "False/Conflict", IDLE, "True/Conflict"),
            moved=ALL,
            calls=[CONNECT, WRITE_MARKER, CREATE, FIND, UNMARK],
            requeue_after=600.0,
            settled=True,
            events=[("Warning", "Conflict", TAKEN_MSG)],
            status={CREATE_PENDING: ABSENT_FIELD, "deploymentId": ABSENT_FIELD},
        ),
    ),
    "400 on create, name free: Stalled InvalidSpec with the service's sentence": Case(
        status={},
        fns={"create_fn": raises(REFUSED)},
        want=Want(
            conditions=conds("False/InvalidSpec", "False/InvalidSpec", IDLE, "True/InvalidSpec"),
            moved=ALL,
            calls=[CONNECT, WRITE_MARKER, CREATE, FIND, UNMARK],
            requeue_after=600.0,
            settled=True,
            events=[("Warning", "InvalidSpec", REFUSED_MSG)],
            status={CREATE_PENDING: ABSENT_FIELD, "deploymentId": ABSENT_FIELD},
        ),
    ),
    "422 on create: Stalled InvalidSpec, no lookup": Case(
        status={},
        fns={"create_fn": raises(CREATE_422)},
        want=Want(
            conditions=conds("False/InvalidSpec", "False/InvalidSpec", IDLE, "True/InvalidSpec"),
            moved=ALL,
            calls=[CONNECT, WRITE_MARKER, CREATE],
            requeue_after=600.0,
            settled=True,
            events=[("Warning", "InvalidSpec", str(CREATE_422))],
        ),
    ),
    "Conflict with a prior marker, find hit: our own create, adopted": Case(
        status=MARKER,
        fns={"create_fn": raises(CONFLICT), "find_fn": returns(None, "dep-found")},
        want=Want(
            conditions=conds("True/Deployed"),
            moved=ALL,
            calls=[
                CONNECT,
                FIND,
                WRITE_MARKER,
                CREATE,
                FIND,
                observe("dep-found"),
            ],
            requeue_after=600.0,
            settled=True,
            events=[
                ("Normal", "Created", "Created deployment dep-found"),
                ("Normal", "Deployed", "Ready"),
            ],
            status={"deploymentId": "dep-found", CREATE_PENDING: ABSENT_FIELD},
        ),
    ),
    # A field that names the deployment for good was corrected while no id was
    # recorded (admission allows it then): the marker names the old key.
    "marker of a corrected name, nothing made under it: created under the spec's": Case(
        status=EARLIER_MARKER,
        want=Want(
            conditions=conds("False/Creating", reconciling="True/Creating"),
            moved=ALL,
            calls=[CONNECT, FIND_EARLIER, WRITE_MARKER, CREATE],
            requeue_after=2.0,
            settled=False,
            events=[("Normal", "Created", "Created deployment dep-new")],
            status={"deploymentId": "dep-new"},
        ),
    ),
    "marker of a corrected name, one made under it: Stalled Conflict, none adopted": Case(
        status=EARLIER_MARKER,
        fns={"find_by_key_fn": lambda _key: "dep-old"},
        want=Want(
            conditions=conds("False/Conflict", "False/Conflict", IDLE, "True/Conflict"),
            moved=ALL,
            calls=[CONNECT, FIND_EARLIER],
            requeue_after=600.0,
            settled=True,
            events=[("Warning", "Conflict", EARLIER_CONFLICT)],
            status={"deploymentId": ABSENT_FIELD},
            messages={"Stalled": EARLIER_CONFLICT},
        ),
    ),
    "Conflict with a prior marker, find miss: Stalled Conflict, marker cleared": Case(
        status=MARKER,
        fns={"create_fn": raises(CONFLICT)},
        want=Want(
            conditions=conds("False/Conflict", "False/Conflict", IDLE, "True/Conflict"),
            moved=ALL,
            calls=[
                CONNECT,
                FIND,
                WRITE_MARKER,
                CREATE,
                FIND,
                UNMARK,
            ],
            requeue_after=600.0,
            settled=True,
            events=[("Warning", "Conflict", str(CONFLICT))],
            status={CREATE_PENDING: ABSENT_FIELD, "deploymentId": ABSENT_FIELD},
        ),
    ),
    # ------------------------------------------------------------------ errors
    "DependencyNotReady on connect (fresh): waits, not Stalled, Ready Unknown": Case(
        status={},
        connect_error=NOT_READY,
        want=Want(
            conditions=conds(
                "Unknown/DependencyNotReady",
                "False/DependencyNotReady",
                "True/DependencyNotReady",
                IDLE,
            ),
            moved=ALL,
            calls=[CONNECT],
            requeue_after=2.0,
            settled=False,
            events=[("Warning", "DependencyNotReady", "Secret llm-keys has no key openai")],
            messages={"Synced": "Secret llm-keys has no key openai"},
        ),
    ),
    "DependencyNotReady on observe: Ready kept, backoff grows with attempt": Case(
        status=SETTLED,
        fns={"observe_fn": raises(NOT_READY)},
        attempt=2,
        want=Want(
            conditions=conds(
                "True/Deployed", "False/DependencyNotReady", "True/DependencyNotReady", IDLE
            ),
            moved=["Reconciling", "Synced"],
            calls=[CONNECT, observe()],
            requeue_after=8.0,
            settled=False,
            events=[("Warning", "DependencyNotReady", "Secret llm-keys has no key openai")],
        ),
    ),
    "Unavailable: Synced False, Ready kept from before, retry in 2 s": Case(
        status=SETTLED,
        fns={"observe_fn": raises(UNAVAILABLE)},
        want=Want(
            conditions=conds(
                "True/Deployed",
                "False/ControlPlaneUnavailable",
                "True/ControlPlaneUnavailable",
                IDLE,
            ),
            moved=["Reconciling", "Synced"],
            calls=[CONNECT, observe()],
            requeue_after=2.0,
            settled=False,
            events=[("Warning", "ControlPlaneUnavailable", str(UNAVAILABLE))],
        ),
    ),
    "RateLimited: Synced False RateLimited, Retry-After honoured": Case(
        status=SETTLED,
        fns={
            "observe_fn": raises(
                errors.RateLimited("GET /v2/deployments: 429 Too Many Requests", retry_after=30.0)
            )
        },
        want=Want(
            conditions=conds("True/Deployed", "False/RateLimited", "True/RateLimited", IDLE),
            moved=["Reconciling", "Synced"],
            calls=[CONNECT, observe()],
            requeue_after=30.0,
            settled=False,
            events=[("Warning", "RateLimited", "GET /v2/deployments: 429 Too Many Requests")],
        ),
    ),
    "Invalid: Stalled InvalidSpec, requeue at resync": Case(
        status=SETTLED,
        fns={"observe_fn": raises(errors.Invalid(INVALID_MSG))},
        want=stalled_by(
            "InvalidSpec",
            INVALID_MSG,
            moved=["Ready", "Stalled", "Synced"],
            calls=[CONNECT, observe()],
        ),
    ),
    "Unauthorized: Stalled, the message says the key was refused": Case(
        status=SETTLED,
        fns={"observe_fn": raises(errors.Unauthorized(UNAUTHORIZED_MSG))},
        want=stalled_by(
            "Unauthorized",
            f"the control plane refused the API key: {UNAUTHORIZED_MSG}",
            moved=["Ready", "Stalled", "Synced"],
            calls=[CONNECT, observe()],
        ),
    ),
    "Forbidden: Stalled, the message says the key may not act here": Case(
        status=SETTLED,
        fns={"observe_fn": raises(errors.Forbidden(FORBIDDEN_MSG))},
        want=stalled_by(
            "Forbidden",
            f"the API key may not act in this workspace: {FORBIDDEN_MSG}",
            moved=["Ready", "Stalled", "Synced"],
            calls=[CONNECT, observe()],
        ),
    ),
    "Unauthorized on create: Stalled, never retried in a loop": Case(
        status={},
        fns={"create_fn": raises(errors.Unauthorized("POST /v2/deployments: 401 Unauthorized"))},
        want=Want(
            conditions=conds("False/Unauthorized", "False/Unauthorized", IDLE, "True/Unauthorized"),
            moved=ALL,
            calls=[CONNECT, WRITE_MARKER, CREATE],
            requeue_after=600.0,
            settled=True,
            events=[
                (
                    "Warning",
                    "Unauthorized",
                    "the control plane refused the API key: POST /v2/deployments: 401 Unauthorized",
                )
            ],
        ),
    ),
}

# ------------------------------------------------------------------ approval gate

MANUAL = {"update_policy": "Manual"}
IMAGE_FIELD = "sourceRevisionConfig.imageUri"
WAITING = "False/AwaitingApproval"
HELD = conds(WAITING, WAITING, "True/AwaitingApproval")
IMAGE_EDIT = observed(
    up_to_date=False,
    drift=("sourceRevisionConfig.imageUri",),
    action="new-revision",
    reasons=("image",),
)
IMAGE_CHANGE = {
    "action": "new-revision",
    "reasons": ["image"],
    "fields": ["sourceRevisionConfig.imageUri"],
}


def pending(generation: int, **change: Any) -> dict[str, Any]:
    return {"generation": generation, "action": "create", "reasons": [], "fields": [], **change}


def waiting(generation: int, what: str) -> str:
    return (
        f"generation {generation} waits for approval (updatePolicy Manual): {what}; approve "
        f"it with `deployplane approve agent -n team-a` (or annotate "
        f"deployplane.io/approved-generation={generation})"
    )


IMAGE_WAIT = waiting(2, "new-revision (image) of sourceRevisionConfig.imageUri")
HELD_AT_2: dict[str, Any] = {
    **SETTLED,
    "observedGeneration": 2,
    "conditions": conditions(WAITING, WAITING, "True/AwaitingApproval", gen=2),
    "pendingChange": pending(2, **IMAGE_CHANGE),
}
UPDATED_TO_REV_2 = observed(
    phase=Phase.PROGRESSING, reason=ADReason.REVISION_IN_PROGRESS, latestRevisionId="rev-2"
)

CASES.update(
    {
        "Manual, no id: the create waits (no marker, no POST), pendingChange create, one Event": (
            Case(
                status={},
                spec=MANUAL,
                want=Want(
                    conditions=HELD,
                    moved=ALL,
                    calls=[CONNECT],
                    requeue_after=600.0,
                    settled=True,
                    events=[("Normal", "AwaitingApproval", waiting(1, "create"))],
                    status={"pendingChange": pending(1), "deploymentId": ABSENT_FIELD},
                    messages={"Synced": waiting(1, "create")},
                ),
            )
        ),
        "Manual, generation 1 approved: created as under Automatic": Case(
            status={},
            spec=MANUAL,
            approved=1,
            want=Want(
                conditions=conds("False/Creating", reconciling="True/Creating"),
                moved=ALL,
                calls=[CONNECT, WRITE_MARKER, CREATE],
                requeue_after=2.0,
                settled=False,
                events=[("Normal", "Created", "Created deployment dep-new")],
                status={"deploymentId": "dep-new", "pendingChange": ABSENT_FIELD},
            ),
        ),
        "Manual, a dependency not ready: no change to hold yet, retried": Case(
            status={},
            spec=MANUAL,
            fns={"resolve_fn": raises(NOT_READY)},
            want=Want(
                conditions=conds(
                    "Unknown/DependencyNotReady",
                    "False/DependencyNotReady",
                    "True/DependencyNotReady",
                ),
                moved=ALL,
                calls=[CONNECT],
                requeue_after=2.0,
                settled=False,
                events=[("Warning", "DependencyNotReady", "Secret llm-keys has no key openai")],
                status={"pendingChange": ABSENT_FIELD},
            ),
        ),
        "Manual, spec edited: the PATCH waits, pendingChange is the plan row, one Event": Case(
            status=SETTLED,
            spec=MANUAL,
            generation=2,
            approved=1,
            fns={"observe_fn": returns(IMAGE_EDIT)},
            want=Want(
                conditions=HELD,
                moved=ALL,
                calls=[CONNECT, observe()],
                requeue_after=600.0,
                settled=True,
                events=[("Normal", "AwaitingApproval", IMAGE_WAIT)],
                status={"pendingChange": pending(2, **IMAGE_CHANGE), "observedGeneration": 2},
                messages={"Ready": IMAGE_WAIT, "Reconciling": IMAGE_WAIT},
            ),
        ),
        "Manual, still waiting at the resync: no second Event, nothing moves": Case(
            status=HELD_AT_2,
            spec=MANUAL,
            generation=2,
            approved=1,
            fns={"observe_fn": returns(IMAGE_EDIT)},
            want=Want(
                conditions=HELD,
                moved=[],
                calls=[CONNECT, observe()],
                requeue_after=600.0,
                settled=True,
                status={"pendingChange": pending(2, **IMAGE_CHANGE)},
            ),
        ),
        "Manual, a newer edit before approval replaces the pending change, its own Event": Case(
            status=HELD_AT_2,
            spec=MANUAL,
            generation=3,
            approved=2,
            fns={
                "observe_fn": returns(
                    observed(
                        up_to_date=False,
                        drift=("sourceRevisionConfig.imageUri", "sourceConfig.resourceSpec"),
                        action="new-revision",
                        reasons=("image",),
                    )
                )
            },
            want=Want(
                conditions=HELD,
                moved=[],
                calls=[CONNECT, observe()],
                requeue_after=600.0,
                settled=True,
                events=[
                    (
                        "Normal",
                        "AwaitingApproval",
                        waiting(
                            3,
                            "new-revision (image) of sourceRevisionConfig.imageUri, "
                            "sourceConfig.resourceSpec",
                        ),
                    )
                ],
                status={
                    "pendingChange": pending(
                        3,
                        action="new-revision",
                        reasons=["image"],
                        fields=["sourceRevisionConfig.imageUri", "sourceConfig.resourceSpec"],
                    )
                },
            ),
        ),
        "Manual, approved: the PATCH goes, pendingChange cleared, Updated": Case(
            status=HELD_AT_2,
            spec=MANUAL,
            generation=2,
            approved=2,
            fns={"observe_fn": returns(IMAGE_EDIT), "update_fn": returns(UPDATED_TO_REV_2)},
            want=Want(
                conditions=conds("False/RevisionInProgress", reconciling="True/RevisionInProgress"),
                moved=["Synced"],
                calls=[CONNECT, observe(), UPDATE],
                requeue_after=2.0,
                settled=False,
                events=[("Normal", "Updated", f"Applied the change to {IMAGE_FIELD}")],
                status={"pendingChange": ABSENT_FIELD, "latestRevisionId": "rev-2"},
            ),
        ),
        "Manual, approved generation drifted on the control plane: put back, no new approval": (
            Case(
                status=SETTLED,
                spec=MANUAL,
                approved=1,
                fns={"observe_fn": returns(IMAGE_EDIT), "update_fn": returns(UPDATED_TO_REV_2)},
                want=Want(
                    conditions=conds(
                        "False/RevisionInProgress", reconciling="True/RevisionInProgress"
                    ),
                    moved=["Ready", "Reconciling"],
                    calls=[CONNECT, observe(), UPDATE],
                    requeue_after=2.0,
                    settled=False,
                    events=[
                        (
                            "Normal",
                            "DriftCorrected",
                            "Corrected drift of sourceRevisionConfig.imageUri: changed on the "
                            "control plane",
                        )
                    ],
                    status={"latestRevisionId": "rev-2"},
                ),
            )
        ),
        "Manual, in sync: nothing to hold, Ready as under Automatic": Case(
            status=SETTLED,
            spec=MANUAL,
            want=Want(
                conditions=conds("True/Deployed"),
                moved=[],
                calls=[CONNECT, observe()],
                requeue_after=600.0,
                settled=True,
                status={"pendingChange": ABSENT_FIELD},
            ),
        ),
        "Manual, gone on the control plane: the id is forgotten, creating again waits": Case(
            status=SETTLED,
            spec=MANUAL,
            fns={"observe_fn": returns(ABSENT)},
            want=Want(
                conditions=HELD,
                moved=ALL,
                calls=[CONNECT, observe(), ("write", {"deploymentId": None})],
                requeue_after=600.0,
                settled=True,
                events=[
                    (
                        "Warning",
                        "ExternalResourceGone",
                        "deployment dep-1 disappeared from the control plane; creating it again",
                    ),
                    ("Normal", "AwaitingApproval", waiting(1, "create")),
                ],
                status={"pendingChange": pending(1), "deploymentId": ABSENT_FIELD},
            ),
        ),
        "Manual and ObserveOnly: nothing is ever sent, so nothing is held": Case(
            status=SETTLED,
            spec={**MANUAL, "management_policy": "ObserveOnly"},
            generation=2,
            fns={"observe_fn": returns(IMAGE_EDIT)},
            want=Want(
                conditions=conds("True/Deployed"),
                moved=[],
                calls=[CONNECT, observe(full=False)],
                requeue_after=600.0,
                settled=True,
                status={"pendingChange": ABSENT_FIELD},
            ),
        ),
    }
)


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
async def test_reconcile(case: Case) -> None:
    ext = ExternalFns(**fresh(case.fns))
    reconciler = Reconciler(
        ConnecterFns(ext, connect_error=case.connect_error), kind="deployment", schedule=TIMING
    )
    outcome = await reconciler.reconcile(
        managed(case.status, case.generation, case.approved, **case.spec),
        writes=ext,
        attempt=case.attempt,
        resync_due=case.resync_due,
    )
    assert summary(outcome, ext.journal, case.want) == wanted(case.want)


WRITES = {"mark", "unmark", "write", "create", "update", "delete"}
"""What a pass's journal shows of its writes (to the object, the status, the control
plane)."""


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
async def test_the_preview_decides_what_the_pass_does_and_writes_nothing(case: Case) -> None:
    """`Reconciler.preview` (what `deployplane plan` shows) over every case of the table:
    the pass's own reads and decision, no write of any kind; and the pass over the same
    resource then creates exactly when it said create, PATCHes exactly when it said a
    patch, and holds exactly the change it showed."""
    mr = managed(case.status, case.generation, case.approved, **case.spec)
    looked = ExternalFns(**fresh(case.fns))
    connecter = ConnecterFns(looked, connect_error=case.connect_error)
    preview: Preview | None = None
    with contextlib.suppress(ExternalError, DependencyNotReady):
        preview = await Reconciler(connecter, kind="deployment", schedule=TIMING).preview(mr)
    assert not [call for call in looked.journal if call[0] in WRITES]
    ran = ExternalFns(**fresh(case.fns))
    reconciler = Reconciler(
        ConnecterFns(ran, connect_error=case.connect_error), kind="deployment", schedule=TIMING
    )
    outcome = await reconciler.reconcile(mr, writes=ran, resync_due=case.resync_due)
    if observe(full=False) in ran.journal and not observe_only(mr):
        return  # a poll compares nothing; a plan always does
    sent = {call[0] for call in ran.journal} & {"create", "update"}
    if preview is None:
        assert not sent  # the pass ends where the preview did, before any call
        return
    acted = set() if preview.decision.held else {preview.decision.step.value} - {"nothing"}
    assert sent == acted
    held = outcome.status.held_change()
    assert held == (preview.change.pending(mr.generation) if preview.decision.held else None)


def state_by_conditions(status: dict[str, Any]) -> str:
    """The state as the conditions tell it (how metrics derived it before `Outcome.state`)."""
    conds = {c["type"]: c["status"] for c in status["conditions"]}
    reasons = {c["type"]: c["reason"] for c in status["conditions"]}
    if conds.get("Stalled") == "True":
        return "stalled"
    if reasons["Synced"] == "AwaitingApproval":
        return "awaiting_approval"
    if conds["Synced"] == "False":
        return "retrying"
    return "ready" if conds["Ready"] == "True" else "progressing"


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
async def test_outcome_state_is_what_the_conditions_say(case: Case) -> None:
    ext = ExternalFns(**fresh(case.fns))
    reconciler = Reconciler(
        ConnecterFns(ext, connect_error=case.connect_error), kind="deployment", schedule=TIMING
    )
    outcome = await reconciler.reconcile(
        managed(case.status, case.generation, case.approved, **case.spec), writes=ext
    )
    want = state_by_conditions(to_kube(outcome.status))
    settled = want in ("ready", "stalled", "awaiting_approval")
    assert (outcome.state.value, outcome.settled) == (want, settled)


async def test_references_are_resolved_at_most_once_a_pass_and_not_for_a_poll() -> None:
    for status, want in ((POLLING, 0), (SETTLED, 1), ({}, 1)):
        ext = ExternalFns(observe_fn=returns(PROGRESSING))
        await Reconciler(ConnecterFns(ext), kind="deployment", schedule=TIMING).reconcile(
            managed(status), writes=ext
        )
        assert ext.resolved == want


# ------------------------------------------------------------------- backoff


@pytest.mark.parametrize(
    ("attempt", "want"),
    [(0, 2.0), (1, 3.0), (2, 4.5), (3, 6.75), (5, 15.1875), (6, 22.78125), (7, 30.0), (50, 30.0)],
)
async def test_poll_delay_grows_from_2_to_a_30_second_cap(attempt: int, want: float) -> None:
    ext = ExternalFns(observe_fn=returns(PROGRESSING))
    outcome = await Reconciler(ConnecterFns(ext), kind="deployment", schedule=TIMING).reconcile(
        managed(POLLING), writes=ext, attempt=attempt
    )
    assert (outcome.requeue_after, outcome.settled) == (want, False)


RETRY_CASES = {
    "first retry": (errors.Unavailable("503"), 0, 2.0),
    "doubles": (errors.Unavailable("503"), 1, 4.0),
    "doubles again": (errors.Unavailable("503"), 3, 16.0),
    "capped at 120 s": (errors.Unavailable("503"), 9, 120.0),
    "Retry-After longer than the backoff wins": (
        errors.Unavailable("503", retry_after=45.0),
        0,
        45.0,
    ),
    "backoff longer than Retry-After wins": (errors.Unavailable("503", retry_after=1.0), 3, 16.0),
    "rate limited, Retry-After": (errors.RateLimited("429", retry_after=90.0), 2, 90.0),
    "rate limited, no Retry-After": (errors.RateLimited("429"), 2, 8.0),
    "dependency not ready": (DependencyNotReady("Listener l not found"), 4, 32.0),
}


@pytest.mark.parametrize(("exc", "attempt", "want"), RETRY_CASES.values(), ids=RETRY_CASES.keys())
async def test_retry_backoff_grows_with_attempt_and_honours_retry_after(
    exc: Exception, attempt: int, want: float
) -> None:
    ext = ExternalFns(observe_fn=raises(exc))
    outcome = await Reconciler(ConnecterFns(ext), kind="deployment", schedule=TIMING).reconcile(
        managed(SETTLED), writes=ext, attempt=attempt
    )
    assert (outcome.requeue_after, outcome.settled) == (want, False)


CLASSIFY_CASES = {
    "NotFound": (errors.NotFound("404"), (Reason.NOT_FOUND, True)),
    "Conflict": (errors.Conflict("409"), (Reason.CONFLICT, True)),
    "Invalid": (errors.Invalid("422"), (Reason.INVALID_SPEC, True)),
    "Unauthorized": (errors.Unauthorized("401"), (Reason.UNAUTHORIZED, True)),
    "Forbidden": (errors.Forbidden("403"), (Reason.FORBIDDEN, True)),
    "RateLimited": (errors.RateLimited("429"), (Reason.RATE_LIMITED, False)),
    "Unavailable": (errors.Unavailable("503"), (Reason.CONTROL_PLANE_UNAVAILABLE, False)),
    "local misconfiguration": (errors.ControlPlaneError("bad URL"), (Reason.INVALID_SPEC, True)),
}


@pytest.mark.parametrize(("exc", "want"), CLASSIFY_CASES.values(), ids=CLASSIFY_CASES.keys())
def test_classify(exc: errors.ControlPlaneError, want: tuple[Reason, bool]) -> None:
    assert classify(exc) == want


# --------------------------------------------------- steady state and events


async def test_steady_state_outcome_is_the_current_status_exactly() -> None:
    """Nothing new -> the very same status (lastTransitionTime included): no write."""
    for status, observation in ((SETTLED, observed()), (POLLING, PROGRESSING)):
        ext = ExternalFns(observe_fn=returns(observation))
        outcome = await Reconciler(ConnecterFns(ext), kind="deployment", schedule=TIMING).reconcile(
            managed(status), writes=ext
        )
        assert to_kube(outcome.status) == status
        assert outcome.events == ()
        assert [c for c in ext.journal if c[0] == "write"] == []


async def test_events_only_on_transitions() -> None:
    """A scripted life: each pass feeds the previous outcome's status to the next."""
    script: list[tuple[str, Any, list[tuple[str, str]]]] = [
        ("create", None, [("Normal", "Created")]),
        ("still building", returns(PROGRESSING), []),
        ("still building again", returns(PROGRESSING), []),
        ("deployed", returns(observed()), [("Normal", "Deployed")]),
        ("steady", returns(observed()), []),
        ("outage", raises(UNAVAILABLE), [("Warning", "ControlPlaneUnavailable")]),
        ("outage goes on", raises(UNAVAILABLE), []),
        ("back", returns(observed()), []),
        ("key revoked", raises(errors.Unauthorized("401")), [("Warning", "Unauthorized")]),
        ("key still revoked", raises(errors.Unauthorized("401")), []),
        ("key restored", returns(observed()), [("Normal", "Deployed")]),
        ("steady again", returns(observed()), []),
    ]
    ext = ExternalFns()
    reconciler = Reconciler(ConnecterFns(ext), kind="deployment", schedule=TIMING)
    status: dict[str, Any] = {}
    got, want = {}, {}
    for name, behaviour, events in script:
        if behaviour is not None:
            ext.observe_fn = behaviour
        outcome = await reconciler.reconcile(managed(status), writes=ext)
        status = to_kube(outcome.status)
        got[name] = [(e.type, e.reason) for e in outcome.events]
        want[name] = events
    assert got == want


async def test_a_flip_moves_lastTransitionTime_and_only_the_flipped_ones() -> None:
    ext = ExternalFns(observe_fn=returns(PROGRESSING))
    outcome = await Reconciler(ConnecterFns(ext), kind="deployment", schedule=TIMING).reconcile(
        managed(SETTLED), writes=ext
    )
    times = {c["type"]: c["lastTransitionTime"] for c in to_kube(outcome.status)["conditions"]}
    assert times["Synced"] == OLD
    assert times["Ready"] != OLD
    assert times["Reconciling"] != OLD  # appears: a transition of its own
    assert times["Ready"].endswith("Z")
    assert "Stalled" not in times


async def test_abnormal_true_conditions_are_there_only_while_true() -> None:
    """kstatus: Reconciling and Stalled are present while True and absent otherwise;
    Ready and Synced are always there."""
    life: list[tuple[Any, list[str]]] = [
        (returns(PROGRESSING), ["Ready", "Synced", "Reconciling"]),
        (returns(observed()), ["Ready", "Synced"]),
        (raises(errors.Unauthorized("401")), ["Ready", "Synced", "Stalled"]),
        (returns(observed()), ["Ready", "Synced"]),
        (raises(UNAVAILABLE), ["Ready", "Synced", "Reconciling"]),
        (returns(observed()), ["Ready", "Synced"]),
    ]
    status: dict[str, Any] = SETTLED
    for observe_fn, types in life:
        ext = ExternalFns(observe_fn=observe_fn)
        reconciler = Reconciler(ConnecterFns(ext), kind="deployment", schedule=TIMING)
        outcome = await reconciler.reconcile(managed(status), writes=ext)
        status = to_kube(outcome.status)
        assert [c["type"] for c in status["conditions"]] == types
        assert all(c["status"] == "True" for c in status["conditions"][2:])


async def test_a_status_of_an_earlier_version_loses_its_idle_conditions_once() -> None:
    """Versions before the abnormal-true change wrote Reconciling and Stalled False: the
    first pass drops them (one write, no Event, Ready and Synced keep their times), and
    the pass after that writes nothing."""
    earlier = {
        **SETTLED,
        "conditions": conditions("True/Deployed", reconciling=EARLIER_IDLE, stalled=EARLIER_IDLE),
    }
    ext = ExternalFns(observe_fn=returns(observed()))
    reconciler = Reconciler(ConnecterFns(ext), kind="deployment", schedule=TIMING)
    outcome = await reconciler.reconcile(managed(earlier), writes=ext)
    assert to_kube(outcome.status) == SETTLED
    assert outcome.events == ()
    again = await reconciler.reconcile(managed(SETTLED), writes=ext)
    assert to_kube(again.status) == SETTLED


# ---------------------------------------------------------------- invalid spec


def test_invalid_spec_stalls_until_the_spec_changes() -> None:
    message = "spec.source: Input should be 'git_host' or 'external_docker'"
    reconciler = Reconciler(ConnecterFns(ExternalFns()), kind="deployment", schedule=TIMING)
    outcome = reconciler.invalid_spec(FakeStatus.model_validate(SETTLED), 2, message)
    want = Want(
        conditions=conds("False/InvalidSpec", "False/InvalidSpec", IDLE, "True/InvalidSpec"),
        moved=["Ready", "Stalled", "Synced"],
        calls=[],
        requeue_after=600.0,
        settled=True,
        events=[("Warning", "InvalidSpec", message)],
        status={"deploymentId": DEP_ID, "observedGeneration": 2},
        messages={"Stalled": message, "Synced": message},
    )
    assert summary(outcome, [], want) == wanted(want)
    # Once stalled, the same invalid spec again writes and announces nothing.
    again = reconciler.invalid_spec(outcome.status, 2, message)
    assert (again.status, again.events) == (outcome.status, ())


# -------------------------------------------------------------------- finalize


@dataclass(frozen=True)
class FinalizeCase:
    status: dict[str, Any]
    want: bool | type[Exception]
    """Released (True), not yet (False), or the error the pass runner retries."""
    calls: list[Call]
    policy: DeletionPolicy = DeletionPolicy.DELETE
    fns: dict[str, Any] = field(default_factory=dict)
    connect_error: BaseException | None = None


FINALIZE_CASES: dict[str, FinalizeCase] = {
    "Orphan: released at once, without even connecting": FinalizeCase(
        status=SETTLED, policy=DeletionPolicy.ORPHAN, want=True, calls=[]
    ),
    "no id ever recorded: released": FinalizeCase(status={}, want=True, calls=[CONNECT]),
    "id known, deletion still pending: not yet": FinalizeCase(
        status=SETTLED,
        fns={"delete_fn": returns(False)},
        want=False,
        calls=[CONNECT, ("delete", DEP_ID)],
    ),
    "id known, gone: released": FinalizeCase(
        status=SETTLED, want=True, calls=[CONNECT, ("delete", DEP_ID)]
    ),
    "adopted id (spec only): deleted too": FinalizeCase(
        status={},
        fns={"adopt_id": "dep-adopt"},
        want=True,
        calls=[CONNECT, ("delete", "dep-adopt")],
    ),
    "create pending: found by name, then deleted": FinalizeCase(
        status=MARKER,
        fns={"find_fn": returns("dep-found"), "delete_fn": returns(False)},
        want=False,
        calls=[CONNECT, FIND, ("delete", "dep-found")],
    ),
    "create pending, nothing found: released": FinalizeCase(
        status=MARKER, want=True, calls=[CONNECT, FIND]
    ),
    "create pending under a name corrected since: found by the marker's, deleted": FinalizeCase(
        status=EARLIER_MARKER,
        fns={"find_by_key_fn": lambda _key: "dep-old"},
        want=True,
        calls=[CONNECT, FIND_EARLIER, ("delete", "dep-old")],
    ),
    "nothing ever made, no connection: released (nothing to delete, none to wait for)": (
        FinalizeCase(status={}, connect_error=NOT_READY, want=True, calls=[CONNECT])
    ),
    "id known, no connection: held until it can be deleted": FinalizeCase(
        status=SETTLED, connect_error=NOT_READY, want=DependencyNotReady, calls=[CONNECT]
    ),
    "create pending, no connection: held (the create may have happened)": FinalizeCase(
        status=MARKER, connect_error=NOT_READY, want=DependencyNotReady, calls=[CONNECT]
    ),
}


@pytest.mark.parametrize("case", FINALIZE_CASES.values(), ids=FINALIZE_CASES.keys())
async def test_finalize(case: FinalizeCase) -> None:
    ext = ExternalFns(**fresh(case.fns))
    connecter = ConnecterFns(ext, connect_error=case.connect_error)
    reconciler = Reconciler(connecter, kind="deployment", schedule=TIMING)
    mr = managed(case.status, deletion_policy=case.policy)
    gone: bool | type[Exception]
    try:
        gone = await reconciler.finalize(mr)
    except Exception as exc:
        gone = type(exc)
    assert {"released": gone, "calls": ext.journal} == {"released": case.want, "calls": case.calls}


async def test_finalize_propagates_control_plane_errors_for_the_pass_runner_to_retry() -> None:
    ext = ExternalFns(delete_fn=raises(UNAVAILABLE))
    reconciler = Reconciler(ConnecterFns(ext), kind="deployment", schedule=TIMING)
    with pytest.raises(ExternalError) as failed:
        await reconciler.finalize(managed(SETTLED))
    assert (failed.value.reason, failed.value.terminal) == (Reason.CONTROL_PLANE_UNAVAILABLE, False)


@pytest.mark.parametrize(
    ("ready_event", "want"),
    [
        (None, ("Normal", "Deployed", "Revision rev-1 is deployed")),
        (
            ("ChangeApplied", "Revision rev-1 runs the change"),
            ("Normal", "ChangeApplied", "Revision rev-1 runs the change"),
        ),
    ],
    ids=["the condition's own", "the kind's"],
)
async def test_the_event_of_ready_again_is_the_kinds_when_it_names_one(
    ready_event: tuple[str, str] | None, want: tuple[str, str, str]
) -> None:
    """A change applied to a revision that ran already makes Ready True again: the
    condition says Deployed as before, the Event what happened (no second Deployed)."""
    waiting = {
        **SETTLED,
        "conditions": conditions("False/AwaitingDataPlane", reconciling="True/AwaitingDataPlane"),
    }
    ready = replace(observed(message="Revision rev-1 is deployed"), ready_event=ready_event)
    ext = ExternalFns(observe_fn=returns(ready))
    reconciler = Reconciler(ConnecterFns(ext), kind="deployment", schedule=TIMING)
    outcome = await reconciler.reconcile(managed(waiting), writes=ext)
    assert [(e.type, e.reason, e.message) for e in outcome.events] == [want]
    conditions_now = {c["type"]: c for c in to_kube(outcome.status)["conditions"]}
    assert (conditions_now["Ready"]["status"], conditions_now["Ready"]["reason"]) == (
        "True",
        "Deployed",
    )
