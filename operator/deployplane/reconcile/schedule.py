"""When a resource is looked at next, and how closely: decided here and nowhere else.

Polls back off while something is in progress (2 s -> 30 s); errors back off on their
own (2 s -> 120 s, or longer if the service said Retry-After); a settled resource is
looked at again every `resync` seconds, and that pass is always a full observation.
Between resyncs, a pass over an unchanged spec whose revision is rolling only polls the
revision. A change of spec (or of the pause or resync annotation) wakes the resource at
once (`PassHistory.changed`). A resource may name its own resync interval in the
annotation `deployplane.io/resync-interval` (`resync_of`).

What a pass tells the work queue is a `Result` (controller-runtime's word): when to
come back, and whether the retry also waits for the global retry rate. The delays are
this module's policy (`Schedule.requeue_after`, by the state a pass ended in), and every
Result is made by `next_pass` from the state and the delay: a pass's outcome
(`Outcome.result`), a pass that raised (`Schedule.failed`), a finalization that must
wait (`NotYet.result`). The workers only read Results (`Workers.finish`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Any, Final

from deployplane.reconcile.conditions import ConditionType, is_true
from deployplane.reconcile.status import ResourceStatus


class State(Enum):
    """One word for where a resource stands after a pass (the metrics' `result`)."""

    READY = "ready"
    PROGRESSING = "progressing"
    RETRYING = "retrying"
    STALLED = "stalled"
    AWAITING_APPROVAL = "awaiting_approval"
    """A change waits for someone's approval (updatePolicy Manual): nothing to poll or
    retry; the approval's annotation wakes the resource."""

    @property
    def settled(self) -> bool:
        """Nothing in progress or being retried: the next pass is a resync."""
        return self in (State.READY, State.STALLED, State.AWAITING_APPROVAL)


@dataclass(frozen=True)
class Result:
    """What a pass tells the work queue (controller-runtime's `reconcile.Result`)."""

    requeue_after: float | None = None
    """Seconds until the next pass; None: not until something adds the key again."""
    rate_limited: bool = False
    """The pass failed: its requeue also waits for the queue's global retry rate
    (client-go's default controller rate limiter), beside the backoff in the delay."""


def next_pass(state: State, delay: float | None) -> Result:
    """The one mapping to a Result: back in `delay` seconds (None: not until something
    adds the key again); a RETRYING pass also waits for the global retry rate."""
    return Result(delay, rate_limited=state is State.RETRYING)


class Default(Enum):
    """The operator's own resync interval (a resource that names none)."""

    TOKEN = "default"


DEFAULT: Final = Default.TOKEN


@dataclass(frozen=True)
class Schedule:
    """The requeue policy of an operator (one per process, read-only)."""

    poll_initial: float = 2.0
    poll_max: float = 30.0
    retry_initial: float = 2.0
    retry_max: float = 120.0
    resync: float = 600.0

    def poll_delay(self, attempt: int) -> float:
        return min(self.poll_max, self.poll_initial * 1.5**attempt)

    def retry_delay(self, attempt: int) -> float:
        return min(self.retry_max, self.retry_initial * 2.0**attempt)

    def requeue_after(self, state: State, attempt: int, retry_after: float | None) -> float:
        """Seconds until the next pass, for the state a pass ended in."""
        if state is State.PROGRESSING:
            return self.poll_delay(attempt)
        if state is State.RETRYING:
            return max(self.retry_delay(attempt), retry_after or 0.0)
        return self.resync

    def failed(self, history: PassHistory) -> Result:
        """A pass that raised: retried with the error backoff, under the global retry
        rate, and counted for the backoff."""
        result = next_pass(State.RETRYING, self.retry_delay(history.attempt))
        history.attempt += 1
        return result

    @staticmethod
    def wants_full(status: ResourceStatus, generation: int, resync_due: bool) -> bool:
        """Only a revision in progress for an unchanged, synced spec may be merely polled."""
        if resync_due or status.observed_generation != generation:
            return True
        polling = is_true(status.conditions, ConditionType.RECONCILING)
        synced = is_true(status.conditions, ConditionType.SYNCED)
        return not (polling and synced)

    def begin(
        self, history: PassHistory, now: float, resync: float | Default | None = DEFAULT
    ) -> bool:
        """A pass starts (`now`: a monotonic clock): True when a resync is due, which
        forces a full observation whatever the status says. `resync`: the resource's own
        interval (`resync_of`; None: never, only the first pass is full)."""
        interval = self.resync if isinstance(resync, Default) else resync
        if interval is None:
            due = history.last_full == -math.inf
        else:
            due = now - history.last_full >= interval
        if due:
            history.last_full = now
        return due

    @staticmethod
    def end(history: PassHistory, state: State) -> None:
        """A pass ended in `state`: unsettled passes count up for the backoffs."""
        history.attempt = 0 if state.settled else history.attempt + 1
        history.last_state = state


Fingerprint = tuple[int, bool, str | None, int | None]
"""What of a watched object wakes it at once when it changes (`state.fingerprint`)."""


@dataclass
class PassHistory:
    """What the schedule remembers of one resource between passes (in its `ResourceState`)."""

    attempt: int = 0
    """Consecutive unsettled passes, for the poll and error backoffs."""
    last_full: float = -math.inf
    """When this process last forced a full observation (monotonic clock)."""
    seen: Fingerprint | None = None
    """(generation, paused, resync annotation, approved generation) at the start of
    the last pass (`state.fingerprint`)."""
    last_state: State | None = None
    """Where the last pass ended (a RETRYING one is requeued under the global rate)."""

    def changed(self, fingerprint: Fingerprint) -> bool:
        """Whether a watch event brings what the last pass has not seen: wake now."""
        return self.seen is not None and fingerprint != self.seen


# The resource's own resync interval. Config Connector's
# `cnrm.cloud.google.com/reconcile-interval-in-seconds`, for deployplane: how often a
# settled resource (Ready, or Stalled) is observed again on the control plane,
# overriding the operator's DEPLOYPLANE_RESYNC_INTERVAL for that resource. Whole
# seconds, `0` meaning never (the resource is still looked at on every change of its
# spec or annotations, while a revision rolls and while errors are retried). A CRD's CEL
# rules cannot see metadata, so a bad value cannot be refused at `kubectl apply`: the
# pass keeps the operator's interval and says why in one Warning Event per value.

RESYNC_ANNOTATION: Final = "deployplane.io/resync-interval"
MIN_RESYNC_SECONDS: Final = 10
"""Below this, resyncs of many resources would be a poll of the control plane."""
MAX_RESYNC_SECONDS: Final = 7 * 24 * 3600
NEVER: Final = None


@dataclass(frozen=True)
class Resync:
    """The interval a resource asks for: seconds, or None for never."""

    seconds: float | None
    problem: str | None = None
    """Why the annotation was not taken (the operator's interval applies), if it was not."""


def annotation_value(body: Mapping[str, Any]) -> str | None:
    annotations = (body.get("metadata") or {}).get("annotations") or {}
    value = annotations.get(RESYNC_ANNOTATION)
    return None if value is None else str(value)


def resync_of(body: Mapping[str, Any], default: float) -> Resync:
    """The resync interval of the resource `body`: its annotation's, else `default`."""
    raw = annotation_value(body)
    if raw is None:
        return Resync(default)
    value = raw.strip()
    if value.isdigit() and value.isascii():
        seconds = int(value)
        if seconds == 0:
            return Resync(NEVER)
        if MIN_RESYNC_SECONDS <= seconds <= MAX_RESYNC_SECONDS:
            return Resync(float(seconds))
    return Resync(
        default,
        f"annotation {RESYNC_ANNOTATION}={raw[:40]!r} ignored: it must be 0 (never) or "
        f"whole seconds from {MIN_RESYNC_SECONDS} to {MAX_RESYNC_SECONDS}; the operator's "
        f"{default:.0f}s applies",
    )
