"""The schedule as pure decisions: requeue per state, the Result a pass hands the work
queue, resync due, full vs poll, wake."""

from __future__ import annotations

import pytest

from deployplane.reconcile.conditions import Condition
from deployplane.reconcile.finalizer import NotYet
from deployplane.reconcile.outcome import Outcome
from deployplane.reconcile.schedule import PassHistory, Result, Schedule, State
from deployplane.reconcile.status import ResourceStatus

SCHEDULE = Schedule()  # poll 2 s -> 30 s, retry 2 s -> 120 s, resync 600 s


@pytest.mark.parametrize(
    ("state", "attempt", "retry_after", "want"),
    [
        (State.READY, 5, None, 600.0),
        (State.STALLED, 5, 90.0, 600.0),
        (State.PROGRESSING, 0, None, 2.0),
        (State.PROGRESSING, 50, None, 30.0),
        (State.RETRYING, 1, None, 4.0),
        (State.RETRYING, 1, 90.0, 90.0),
        (State.RETRYING, 50, None, 120.0),
    ],
)
def test_requeue_after_by_state(
    state: State, attempt: int, retry_after: float | None, want: float
) -> None:
    assert SCHEDULE.requeue_after(state, attempt, retry_after) == want


RESULT_CASES: dict[str, tuple[State, int, float | None, float | None, float | None, Result]] = {
    # name: (state, attempt, Retry-After, recheck, the resource's resync, the Result)
    "ready: back at the resync": (State.READY, 3, None, None, 600.0, Result(600.0)),
    "ready, its own resync": (State.READY, 0, None, None, 60.0, Result(60.0)),
    "ready, resync never: not until something changes": (
        State.READY,
        0,
        None,
        None,
        None,
        Result(None),
    ),
    "stalled: at the resync, not rate limited": (
        State.STALLED,
        4,
        None,
        None,
        600.0,
        Result(600.0),
    ),
    "stalled, a recheck: sooner than the resync": (
        State.STALLED,
        0,
        None,
        30.0,
        600.0,
        Result(30.0),
    ),
    "stalled, a recheck, resync never: the recheck": (
        State.STALLED,
        0,
        None,
        30.0,
        None,
        Result(30.0),
    ),
    "progressing: the poll backoff, not rate limited": (
        State.PROGRESSING,
        1,
        None,
        None,
        600.0,
        Result(3.0),
    ),
    "progressing, resync never: still polled": (
        State.PROGRESSING,
        0,
        None,
        None,
        None,
        Result(2.0),
    ),
    "retrying: the error backoff, rate limited": (
        State.RETRYING,
        1,
        None,
        None,
        600.0,
        Result(4.0, rate_limited=True),
    ),
    "retrying, a longer Retry-After wins": (
        State.RETRYING,
        1,
        90.0,
        None,
        600.0,
        Result(90.0, rate_limited=True),
    ),
    "retrying past a shorter resync: the backoff, not the resync": (
        State.RETRYING,
        50,
        None,
        None,
        60.0,
        Result(120.0, rate_limited=True),
    ),
    "retrying, a sooner recheck (outputs' ConfigMap): the recheck, rate limited": (
        State.RETRYING,
        3,
        None,
        2.0,
        600.0,
        Result(2.0, rate_limited=True),
    ),
}


@pytest.mark.parametrize(
    ("state", "attempt", "retry_after", "recheck", "resync", "want"),
    RESULT_CASES.values(),
    ids=RESULT_CASES.keys(),
)
def test_the_result_of_a_pass_is_decided_from_its_outcome(
    state: State,
    attempt: int,
    retry_after: float | None,
    recheck: float | None,
    resync: float | None,
    want: Result,
) -> None:
    """The one switch (`Outcome.result`) over what the schedule gave the state: the
    workers hand the queue exactly this, and decide nothing."""
    requeue = SCHEDULE.requeue_after(state, attempt, retry_after)
    outcome = Outcome(ResourceStatus(), state, requeue, recheck_after=recheck)
    assert outcome.result(resync) == want


@pytest.mark.parametrize(("attempt", "want"), [(0, 2.0), (1, 4.0), (3, 16.0), (9, 120.0)])
def test_a_pass_that_raised_is_retried_rate_limited_and_counted(attempt: int, want: float) -> None:
    history = PassHistory(attempt=attempt)
    assert SCHEDULE.failed(history) == Result(want, rate_limited=True)
    assert history.attempt == attempt + 1


def test_a_finalization_that_must_wait_is_rate_limited_only_when_the_delete_failed() -> None:
    deleting = NotYet("waiting for the control plane to finish deleting", 2.0)
    failed = NotYet("cannot delete on the control plane yet: 503", 10.0, RuntimeError("503"))
    assert (deleting.result, failed.result) == (Result(2.0), Result(10.0, rate_limited=True))


def test_resync_is_due_once_per_period_and_unsettled_passes_count_up() -> None:
    history = PassHistory()
    assert SCHEDULE.begin(history, 1000.0) is True  # never fully observed by this process
    assert SCHEDULE.begin(history, 1599.0) is False
    assert SCHEDULE.begin(history, 1600.0) is True
    for state, want in ((State.PROGRESSING, 1), (State.RETRYING, 2), (State.READY, 0)):
        SCHEDULE.end(history, state)
        assert history.attempt == want


def status(generation: int, **conditions: str) -> ResourceStatus:
    return ResourceStatus(
        observed_generation=generation,
        conditions=[
            Condition(type=t, status=s, reason="R", last_transition_time="2026-01-01T00:00:00Z")
            for t, s in conditions.items()
        ],
    )


@pytest.mark.parametrize(
    ("current", "resync_due", "want"),
    [
        (status(1, Reconciling="True", Synced="True"), False, False),  # a revision rolls
        (status(1, Reconciling="True", Synced="True"), True, True),  # resync due
        (status(0, Reconciling="True", Synced="True"), False, True),  # the spec changed
        (status(1, Reconciling="True", Synced="False"), False, True),  # retrying an error
        (status(1, Reconciling="False", Synced="True"), False, True),  # settled
        (status(1), False, True),  # no conditions yet
    ],
)
def test_only_a_revision_in_progress_for_an_unchanged_spec_is_merely_polled(
    current: ResourceStatus, resync_due: bool, want: bool
) -> None:
    assert Schedule.wants_full(current, 1, resync_due) is want


def test_a_change_wakes_only_once_a_pass_has_seen_the_resource() -> None:
    history = PassHistory()
    assert not history.changed((1, False, None, None))
    history.seen = (1, False, None, None)
    assert not history.changed((1, False, None, None))
    assert history.changed((2, False, None, None))
    assert history.changed((1, True, None, None))
    assert history.changed((1, False, "60", None))
    assert history.changed((1, False, None, 1))  # an approval


def test_a_resource_that_never_resyncs_is_due_only_at_its_first_pass() -> None:
    schedule, history = Schedule(), PassHistory()
    assert schedule.begin(history, 0.0, None)
    assert not schedule.begin(history, 10 * schedule.resync, None)


def test_its_own_interval_replaces_the_operators() -> None:
    schedule, history = Schedule(), PassHistory()
    assert schedule.begin(history, 0.0, 30.0)
    assert not schedule.begin(history, 29.0, 30.0)
    assert schedule.begin(history, 30.0, 30.0)
    assert not schedule.begin(history, 60.0)  # the operator's 600 s
