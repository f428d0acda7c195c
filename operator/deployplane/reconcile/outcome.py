"""A verdict on one pass -> the Outcome: the whole next status (conditions included),
the state of the resource, when to come back, and the events worth posting.

A verdict is made in one of three ways, each here: from what the kind observed
(`Verdict.of_observation`: its `Phase` read as a `State`), from the error that ended the pass
(`Verdict.failed`: the one reading of `ExternalError` and `DependencyNotReady`), or for a
spec that cannot be read (`Verdict.invalid_spec`). `compose_outcome` turns it into the
conditions and the requeue; `Outcome.result` into what the work queue is told."""

from __future__ import annotations

from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Any, Generic, Literal

from deployplane.reconcile.conditions import (
    FALSE,
    TRUE,
    UNKNOWN,
    Condition,
    ConditionType,
    Reason,
    find_condition,
    set_condition,
)
from deployplane.reconcile.errors import ExternalError
from deployplane.reconcile.external import DependencyNotReady, Observation, Phase
from deployplane.reconcile.schedule import Result, Schedule, State, next_pass
from deployplane.reconcile.status import StatusT

__all__ = [
    "EventReason",
    "EventRecord",
    "EventType",
    "Outcome",
    "State",
    "Verdict",
    "compose_outcome",
]


EventType = Literal["Normal", "Warning"]


class EventReason(StrEnum):
    """The reasons of the Events the core records for what it did (crossplane style, as
    the condition reasons: constants, never ad-hoc strings). An Event about a
    condition's transition (became Ready, stalled, lost sync) carries that condition's
    reason instead: a `conditions.Reason`, or a kind's own."""

    CREATED = "Created"
    UPDATED = "Updated"
    """A change of the spec applied to the external resource."""
    DRIFT_CORRECTED = "DriftCorrected"
    """The external resource was changed by someone else; set back to the spec."""
    ADOPTED = "Adopted"
    OBSERVING = "Observing"
    EXTERNAL_RESOURCE_GONE = "ExternalResourceGone"
    IN_USE = "InUse"
    DELETION_BLOCKED = "DeletionBlocked"
    """The delete on the control plane cannot be made yet; the message says why."""
    INVALID_RESYNC_INTERVAL = "InvalidResyncInterval"
    AWAITING_APPROVAL = "AwaitingApproval"
    """A change held for approval (updatePolicy Manual): one Event per change held,
    saying what it is and how to approve it (the condition's reason too)."""


@dataclass(frozen=True)
class EventRecord:
    """A Kubernetes Event to post: only on meaningful transitions, never per poll."""

    type: EventType
    reason: str
    message: str
    action: str = "Reconcile"
    """What the operator did (the Event's `action`): Create, Update, Adopt, Reconcile."""


@dataclass(frozen=True)
class Outcome(Generic[StatusT]):
    """What a reconcile decided: the whole status to publish, the state, when to come back."""

    status: StatusT
    state: State
    requeue_after: float
    events: tuple[EventRecord, ...] = ()
    recheck_after: float | None = None
    """A stalled resource to look at again this soon rather than at its resync: the
    error said when (a terminal error with Retry-After, or a connection whose refused key
    is fixed in a Secret, which no watch of ours announces)."""

    @property
    def settled(self) -> bool:
        return self.state.settled

    def result(self, resync: float | None) -> Result:
        """The requeue decision of the pass, made here and read by the workers: the
        resource's resync once settled (None: never), else the requeue the schedule gave
        its state; a recheck comes sooner than either. A RETRYING pass is rate limited."""
        delay = resync if self.settled else self.requeue_after
        if self.recheck_after is not None:
            delay = self.recheck_after if delay is None else min(delay, self.recheck_after)
        return next_pass(self.state, delay)


_STATE_OF_PHASE = {
    Phase.READY: State.READY,
    Phase.PROGRESSING: State.PROGRESSING,
    Phase.FAILED: State.STALLED,
}
"""Where the external resource stands (the kind's word) -> where the resource stands."""


@dataclass
class Verdict(Generic[StatusT]):
    """What one pass found, before it becomes conditions."""

    state: State
    """READY, PROGRESSING, STALLED (a terminal failure), or RETRYING (the call failed:
    readiness unknown)."""
    synced: bool
    reason: str
    message: str
    retry_after: float | None = None
    observed: StatusT | None = None
    """The kind's observed fields, laid over the status."""
    ready_event: tuple[str, str] | None = None
    """(reason, message) of the Event of Ready turning True, when not the condition's."""

    @classmethod
    def of_observation(cls, obs: Observation[StatusT, Any]) -> Verdict[StatusT]:
        """The pass went through: what the kind observed."""
        state = _STATE_OF_PHASE[obs.phase]
        return cls(
            state, True, obs.reason, obs.message, observed=obs.status, ready_event=obs.ready_event
        )

    @classmethod
    def failed(cls, exc: ExternalError | DependencyNotReady) -> Verdict[StatusT]:
        """The pass ended on an error: a terminal one stalls (until the spec changes, or
        its Retry-After), any other is retried with the backoff."""
        if isinstance(exc, DependencyNotReady):
            return cls(State.RETRYING, False, exc.reason, str(exc))
        state = State.STALLED if exc.terminal else State.RETRYING
        return cls(state, False, exc.reason, str(exc), retry_after=exc.retry_after)

    @classmethod
    def awaiting_approval(cls, message: str, observed: StatusT | None) -> Verdict[StatusT]:
        """A change held for approval (`reconcile.approval`): not synced, not Ready (the
        spec is not what runs), in progress for kstatus, and nothing to poll."""
        return cls(
            State.AWAITING_APPROVAL, False, Reason.AWAITING_APPROVAL, message, observed=observed
        )

    @classmethod
    def invalid_spec(cls, message: str) -> Verdict[StatusT]:
        """A spec that cannot even be read: stalled until it changes."""
        return cls(State.STALLED, False, Reason.INVALID_SPEC, message)


def compose_outcome(
    current: StatusT,
    gen: int,
    verdict: Verdict[StatusT],
    attempt: int,
    events: list[EventRecord],
    schedule: Schedule,
) -> Outcome[StatusT]:
    """The whole next status (conditions included) and the requeue, from a verdict."""
    conditions = _conditions(current.conditions, gen, verdict)
    events.extend(_transition_events(current.conditions, conditions, verdict.ready_event))
    status = current if verdict.observed is None else current.overlay(verdict.observed)
    status = status.evolve(observed_generation=gen, conditions=conditions)
    state = verdict.state
    requeue = schedule.requeue_after(state, attempt, verdict.retry_after)
    recheck = verdict.retry_after if state is State.STALLED else None
    return Outcome(status, state, requeue, tuple(events), recheck_after=recheck)


def unsynced(
    outcome: Outcome[StatusT],
    reason: str,
    message: str,
    generation: int,
    *,
    before: list[Condition],
) -> Outcome[StatusT]:
    """`outcome` with Synced=False for a problem found after the reconcile (the outputs'
    ConfigMap); a Warning Event when the Synced reason `before` the pass was another.
    The transition time is carried over from `before` (not from `outcome`, whose Synced
    the reconcile just set True): a problem that persists costs no status write."""
    conditions = [
        set_condition(before, ConditionType.SYNCED, FALSE, reason, message, generation)
        if c.type == ConditionType.SYNCED
        else c
        for c in outcome.status.conditions
    ]
    events = outcome.events
    was = find_condition(before, ConditionType.SYNCED)
    if was is None or was.reason != reason:
        events = (*events, EventRecord("Warning", reason, message))
    return replace(outcome, status=outcome.status.evolve(conditions=conditions), events=events)


def retry_soon(outcome: Outcome[StatusT], delay: float) -> Outcome[StatusT]:
    """`outcome`, but back within `delay` seconds (a problem found after the reconcile
    that the next pass may not have): a settled outcome becomes RETRYING."""
    if not outcome.state.settled:
        return replace(outcome, requeue_after=min(delay, outcome.requeue_after))
    return replace(outcome, state=State.RETRYING, requeue_after=delay)


def _conditions(previous: list[Condition], gen: int, verdict: Verdict[StatusT]) -> list[Condition]:
    """Ready and Synced always; Reconciling and Stalled only while True.

    kstatus defines Reconciling and Stalled as abnormal-true conditions: present (True)
    while something unusual happens, absent when all is normal, and Flux's controllers
    remove them rather than set them False. Absent, they cost nothing: every write of
    the status, and every read of it (the apiserver's, each watcher's), handles two
    conditions instead of four once a resource is Ready (`docs/benchmarks.md`)."""

    def cond(type_: ConditionType, status: str, reason: str, message: str = "") -> Condition:
        return set_condition(previous, type_, status, reason, message, gen)

    state = verdict.state
    if verdict.synced:
        synced = cond(ConditionType.SYNCED, TRUE, Reason.RECONCILE_SUCCESS)
    else:
        synced = cond(ConditionType.SYNCED, FALSE, verdict.reason, verdict.message)
    if state is State.READY:
        ready = cond(ConditionType.READY, TRUE, verdict.reason or Reason.AVAILABLE, verdict.message)
    elif state is State.RETRYING:
        # The call failed: readiness of the external resource is not known anew.
        old = find_condition(previous, ConditionType.READY)
        ready = old or cond(ConditionType.READY, UNKNOWN, verdict.reason, verdict.message)
    else:
        ready = cond(ConditionType.READY, FALSE, verdict.reason, verdict.message)
    conditions = [ready, synced]
    if state in (State.PROGRESSING, State.RETRYING, State.AWAITING_APPROVAL):
        conditions.append(cond(ConditionType.RECONCILING, TRUE, verdict.reason, verdict.message))
    if state is State.STALLED:
        conditions.append(cond(ConditionType.STALLED, TRUE, verdict.reason, verdict.message))
    return conditions


_WARNING_TRANSITIONS = {(ConditionType.STALLED, TRUE), (ConditionType.SYNCED, FALSE)}
_TOLD_BY_THE_PASS = frozenset({Reason.AWAITING_APPROVAL})
"""Reasons whose Event the pass posts itself (a Normal one per change held), not a
Warning at the condition's flip."""


def _transition_events(
    previous: list[Condition], current: list[Condition], ready_event: tuple[str, str] | None
) -> list[EventRecord]:
    """Events for the transitions a person cares about: became Ready (`ready_event`
    when the kind says what it means), stalled, lost sync."""
    before = {c.type: c for c in previous}
    out: list[EventRecord] = []
    for c in current:
        old = before.get(c.type)
        flipped = old is None or old.status != c.status or old.reason != c.reason
        if not flipped:
            continue
        if c.type == ConditionType.READY and c.status == TRUE:
            reason, message = ready_event or (c.reason, c.message or "Ready")
            event = EventRecord("Normal", reason, message)
        elif c.reason in _TOLD_BY_THE_PASS:
            continue
        elif (c.type, c.status) in _WARNING_TRANSITIONS:
            event = EventRecord("Warning", c.reason, c.message)
        else:
            continue
        # A terminal error flips Synced and Stalled together: one event says it.
        if event not in out:
            out.append(event)
    return out
