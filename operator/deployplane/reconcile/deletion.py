"""What a resource being deleted says while our finalizer must stay on it.

A deletion that goes through needs no word: the object is gone within a pass or two.
One that waits says why in its conditions, so that `kubectl get` shows it (Ready
False, with the reason) rather than the Ready=True of the last pass:
- `InUse`: a dependency (a ControlPlaneConnection, a Listener) that resources still use
  waits for them (`reconcile.usage`); its message names them;
- `DeletionBlocked`: the delete on the control plane cannot be made (its connection or
  API key missing, the control plane unreachable, the key refused); Synced says the
  error's own reason (`DependencyNotReady`, `ControlPlaneUnavailable`...), the
  message names what is missing, and a Warning Event tells it once per message;
- `Deleting`: after either, the control plane is deleting (the message of the wait
  before it would be stale). A deletion never held says nothing (no status write).
Reconciling is True while it waits, as for anything in progress; Stalled goes (it is
retried).
"""

from __future__ import annotations

from typing import Final

from deployplane.reconcile.conditions import (
    FALSE,
    TRUE,
    Condition,
    ConditionType,
    Reason,
    find_condition,
    set_condition,
)
from deployplane.reconcile.outcome import EventReason, EventRecord
from deployplane.reconcile.status import StatusT

HELD: Final = frozenset({Reason.IN_USE, Reason.DELETION_BLOCKED})
"""The Ready reasons of a deletion that waits on something other than the control
plane's own work."""


def held(status: StatusT) -> bool:
    """Whether the status says the deletion waits (`InUse`, `DeletionBlocked`)."""
    ready = find_condition(status.conditions, ConditionType.READY)
    return ready is not None and ready.status == FALSE and ready.reason in HELD


def waiting(
    status: StatusT, generation: int, reason: Reason, message: str, cause: str | None = None
) -> tuple[StatusT, list[EventRecord]]:
    """The status of a deletion that waits (`reason`: `InUse`, `DeletionBlocked`,
    `Deleting`), and the Events it is worth: `DeletionBlocked` told once per message.
    `cause`: the reason of the error that blocks it, for Synced."""
    previous = status.conditions

    def cond(type_: ConditionType, value: str, why: str, text: str = message) -> Condition:
        return set_condition(previous, type_, value, why, text, generation)

    ready = cond(ConditionType.READY, FALSE, reason)
    if cause is not None:
        synced: Condition | None = cond(ConditionType.SYNCED, FALSE, cause)
    elif reason is Reason.DELETING:
        synced = cond(ConditionType.SYNCED, TRUE, Reason.RECONCILE_SUCCESS, "")
    else:
        synced = find_condition(previous, ConditionType.SYNCED)
    conditions = [
        ready,
        *([synced] if synced else []),
        cond(ConditionType.RECONCILING, TRUE, reason),
    ]
    events = []
    before = find_condition(previous, ConditionType.READY)
    told = before is not None and (before.reason, before.message) == (reason, message)
    if reason is Reason.DELETION_BLOCKED and not told:
        events.append(EventRecord("Warning", EventReason.DELETION_BLOCKED, message, "Delete"))
    return status.evolve(observed_generation=generation, conditions=conditions), events
