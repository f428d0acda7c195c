"""The conditions every kind publishes, and the reasons the generic core gives them.

Conditions follow the kstatus convention so that `kubectl wait --for=condition=Ready`,
Flux and Argo CD (the chart's Lua health check) understand the resources without help:

- `Ready`: the external resource is there and as the spec wants it (a kind says when).
- `Synced`: the last call to the control plane succeeded.
- `Reconciling`: something is in progress (a revision rolling out, a retry pending).
- `Stalled`: a terminal failure that only a change of spec (or of the world) can fix.

Reconciling and Stalled are kstatus's abnormal-true conditions: present (True) while
something unusual happens, absent when all is normal (never written False).

`lastTransitionTime` moves only when a condition's status flips, so a reconcile that
finds nothing new produces an identical status and therefore no write. Reasons that only
one kind gives (a revision's BuildFailed, say) live with that kind's externals.
"""

from __future__ import annotations

from datetime import UTC, datetime
from enum import StrEnum
from typing import Final

from pydantic import BaseModel, ConfigDict, Field

from deployplane.naming import camelize


class ConditionType(StrEnum):
    READY = "Ready"
    SYNCED = "Synced"
    RECONCILING = "Reconciling"
    STALLED = "Stalled"


class Reason(StrEnum):
    """Reasons the generic core gives (crossplane style: constants, never ad-hoc strings)."""

    AVAILABLE = "Available"
    RECONCILE_SUCCESS = "ReconcileSuccess"
    DEPENDENCY_NOT_READY = "DependencyNotReady"
    INVALID_SPEC = "InvalidSpec"
    CONFLICT = "Conflict"
    NOT_FOUND = "NotFound"
    UNAUTHORIZED = "Unauthorized"
    FORBIDDEN = "Forbidden"
    CONTROL_PLANE_UNAVAILABLE = "ControlPlaneUnavailable"
    RATE_LIMITED = "RateLimited"
    IN_USE = "InUse"
    """Being deleted, held while resources still use it (`reconcile.deletion`)."""
    DELETION_BLOCKED = "DeletionBlocked"
    """Being deleted, and the delete on the control plane cannot be made yet."""
    DELETING = "Deleting"
    """Being deleted, the control plane at work (said only after one of the above)."""
    CREATE_PENDING = "CreatePending"
    """A create marker another writer put on the object while this pass was about to
    create (`reconcile.writer.MarkedMeanwhile`): the next pass looks under it."""
    AWAITING_APPROVAL = "AwaitingApproval"
    """updatePolicy Manual: a change waits for its generation's approval
    (`reconcile.approval`)."""


TRUE: Final = "True"
FALSE: Final = "False"
UNKNOWN: Final = "Unknown"


class StatusModel(BaseModel):
    """Status is written camelCase, as Kubernetes APIs are."""

    model_config = ConfigDict(
        alias_generator=camelize, validate_by_name=True, serialize_by_alias=True, extra="ignore"
    )


class Condition(StatusModel):
    """A condition in the Kubernetes shape (metav1.Condition)."""

    type: str = Field(description="Ready, Synced, Reconciling or Stalled.")
    status: str = Field(description="True, False or Unknown.")
    reason: str = Field(description="Machine-readable reason, CamelCase.")
    message: str = Field("", description="What happened and what to do about it.")
    last_transition_time: str = Field(description="When the status last flipped.")
    observed_generation: int | None = Field(None, description="Generation this was set for.")


def now_rfc3339() -> str:
    return datetime.now(UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z")


def set_condition(
    previous: list[Condition],
    type_: ConditionType,
    status: str,
    reason: str,
    message: str,
    generation: int | None,
    *,
    now: str | None = None,
) -> Condition:
    """A condition carrying over lastTransitionTime unless its status flips."""
    old = find_condition(previous, type_)
    changed = old is None or old.status != status
    return Condition(
        type=type_,
        status=status,
        reason=str(reason),
        message=message,
        last_transition_time=(now or now_rfc3339())
        if changed or old is None
        else old.last_transition_time,
        observed_generation=generation,
    )


ABNORMAL_TRUE: Final = frozenset({ConditionType.RECONCILING, ConditionType.STALLED})
"""Present only while True; their absence means False."""


def condition_status(conditions: list[Condition], type_: ConditionType) -> str:
    """True, False or Unknown: an absent abnormal-true condition is False, any other
    absent condition Unknown."""
    found = find_condition(conditions, type_)
    if found is not None:
        return found.status
    return FALSE if type_ in ABNORMAL_TRUE else UNKNOWN


def find_condition(conditions: list[Condition], type_: ConditionType) -> Condition | None:
    return next((c for c in conditions if c.type == type_), None)


def is_true(conditions: list[Condition], type_: ConditionType) -> bool:
    found = find_condition(conditions, type_)
    return found is not None and found.status == TRUE
