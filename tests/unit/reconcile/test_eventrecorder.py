"""The event recorder: Events go out in the order recorded, stamped when recorded, at
most a burst at once and then `qps` a second; beyond `capacity` they are dropped and
counted; a failed post is logged and forgotten; `stop` posts what waits, for a while.
No Kubernetes, no real waiting: a fake clock that the recorder's sleep advances."""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
from typing import Any

import pytest

from deployplane.reconcile.eventrecorder import (
    EventRecorder,
    PendingEvent,
    TokenBucket,
    involved_object,
)
from deployplane.reconcile.outcome import EventRecord


class Clock:
    def __init__(self) -> None:
        self.now = 0.0
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        """Let the posts already started run first, then let the time pass at once."""
        for _ in range(3):
            await asyncio.sleep(0)
        self.slept.append(seconds)
        self.now += seconds


def body(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "deployplane.io/v1alpha1",
        "kind": "AgentDeployment",
        "metadata": {
            "namespace": "ns",
            "name": name,
            "uid": f"uid-{name}",
            "annotations": {"big": "x" * 1000},
            "managedFields": [{"manager": "kubectl"}],
        },
        "spec": {"source": "external_docker"},
        "status": {"conditions": []},
    }


class Sink:
    """Posts by appending (time of the post, name, reason); `fail` names to refuse."""

    def __init__(self, clock: Clock, fail: frozenset[str] = frozenset()) -> None:
        self.clock, self.fail = clock, fail
        self.posted: list[tuple[float, str, str]] = []
        self.pending: list[PendingEvent] = []

    async def __call__(self, pending: PendingEvent) -> None:
        name = pending.involved["metadata"]["name"]
        if name in self.fail:
            raise RuntimeError("apiserver said no")
        self.pending.append(pending)
        self.posted.append((self.clock.now, name, pending.event.reason))


async def settle(recorder: EventRecorder, rounds: int = 2000) -> None:
    for _ in range(rounds):
        if not len(recorder):
            return
        await asyncio.sleep(0)


CREATED = EventRecord("Normal", "Created", "Created deployment d-1")


def recording(sink: Sink, count: int, **settings: Any) -> EventRecorder:
    """A started recorder on the sink's fake clock, `count` Events (r0, r1, ...) recorded."""
    recorder = EventRecorder(sink, clock=sink.clock, sleep=sink.clock.sleep, **settings)
    recorder.start()
    for i in range(count):
        recorder.record(body(f"r{i}"), CREATED)
    return recorder


def test_a_token_bucket_gives_a_burst_then_its_rate() -> None:
    clock = Clock()
    bucket = TokenBucket(rate=4.0, burst=2, clock=clock)
    assert [bucket.take(), bucket.take()] == [0.0, 0.0]
    assert bucket.take() == pytest.approx(0.25)
    clock.now += 0.25
    assert bucket.take() == 0.0
    clock.now += 10.0  # a long quiet time saves up no more than the burst
    assert [bucket.take(), bucket.take()] == [0.0, 0.0]
    assert bucket.take() > 0.0


async def test_a_burst_goes_out_at_once_and_the_rest_at_the_rate_in_order() -> None:
    sink = Sink(Clock())
    recorder = recording(sink, 7, qps=2.0, burst=3)
    await settle(recorder)
    assert [name for _, name, _ in sink.posted] == [f"r{i}" for i in range(7)]
    times = [at for at, _, _ in sink.posted]
    assert times[:3] == [0.0, 0.0, 0.0]
    assert times[3:] == pytest.approx([0.5, 1.0, 1.5, 2.0])
    assert recorder.dropped == 0
    await recorder.stop()


async def test_an_event_names_its_object_and_keeps_the_time_it_was_recorded() -> None:
    clock = Clock()
    sink = Sink(clock)
    recorder = EventRecorder(sink, qps=1.0, burst=1, clock=clock, sleep=clock.sleep)
    before = dt.datetime.now(dt.UTC)
    recorder.record(body("a"), CREATED)
    recorder.record(body("b"), CREATED)
    after = dt.datetime.now(dt.UTC)
    recorder.start()
    await settle(recorder)
    first, second = sink.pending
    assert first.involved == {
        "apiVersion": "deployplane.io/v1alpha1",
        "kind": "AgentDeployment",
        "metadata": {"namespace": "ns", "name": "a", "uid": "uid-a"},
    }, "not the body: no annotations, spec, status or managedFields held while waiting"
    assert before <= first.recorded_at <= second.recorded_at <= after
    assert sink.posted[1][0] == 1.0, "posted a second later, still stamped when recorded"
    await recorder.stop()


async def test_beyond_capacity_events_are_dropped_counted_and_logged_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    clock = Clock()
    sink = Sink(clock)
    drops: list[int] = []
    recorder = EventRecorder(
        sink, qps=1.0, burst=1, capacity=2, on_drop=drops.append, clock=clock, sleep=clock.sleep
    )
    with caplog.at_level(logging.WARNING, logger="deployplane.events"):
        for i in range(5):
            recorder.record(body(f"r{i}"), CREATED)
    assert (recorder.dropped, drops) == (3, [1, 1, 1])
    assert len([r for r in caplog.records if "dropped" in r.getMessage()]) == 1
    assert "the recorder is full" in caplog.text
    recorder.start()
    await settle(recorder)
    assert [name for _, name, _ in sink.posted] == ["r0", "r1"]
    await recorder.stop()


async def test_a_failed_post_is_logged_and_the_next_events_still_go_out(
    caplog: pytest.LogCaptureFixture,
) -> None:
    clock = Clock()
    sink = Sink(clock, fail=frozenset({"bad"}))
    recorder = EventRecorder(sink, qps=10.0, burst=10, clock=clock, sleep=clock.sleep)
    recorder.start()
    with caplog.at_level(logging.WARNING, logger="deployplane.events"):
        recorder.record(body("bad"), CREATED)
        recorder.record(body("good"), CREATED)
        await settle(recorder)
    assert [name for _, name, _ in sink.posted] == ["good"]
    assert "ns/bad: event Created not posted: apiserver said no" in caplog.text
    await recorder.stop()


async def test_stop_posts_what_waits_and_later_records_are_dropped() -> None:
    sink = Sink(Clock())
    recorder = recording(sink, 3, qps=100.0, burst=1)
    await recorder.stop()
    assert [name for _, name, _ in sink.posted] == ["r0", "r1", "r2"]
    recorder.record(body("late"), CREATED)
    assert recorder.dropped == 1
    assert len(recorder) == 0


async def test_stop_drops_what_it_cannot_post_in_time() -> None:
    sink = Sink(Clock())
    drops: list[int] = []
    # Real time: one Event a minute after the first, a stop that waits 50 ms.
    recorder = EventRecorder(sink, qps=1 / 60, burst=1, on_drop=drops.append)
    recorder.start()
    for i in range(3):
        recorder.record(body(f"r{i}"), CREATED)
    await recorder.stop(drain_seconds=0.05)
    assert [name for _, name, _ in sink.posted] == ["r0"]
    assert (recorder.dropped, drops) == (2, [2])
    assert len(recorder) == 0


async def test_posts_in_flight_are_bounded() -> None:
    clock = Clock()
    gate = asyncio.Event()
    running = 0
    most = 0

    async def slow(pending: PendingEvent) -> None:
        nonlocal running, most
        running += 1
        most = max(most, running)
        await gate.wait()
        running -= 1

    recorder = EventRecorder(slow, qps=1000.0, burst=100, in_flight=2, clock=clock)
    recorder.start()
    for i in range(6):
        recorder.record(body(f"r{i}"), CREATED)
    for _ in range(50):
        await asyncio.sleep(0)
    assert most == 2
    gate.set()
    await settle(recorder)
    assert most == 2
    await recorder.stop()


def test_bad_settings_are_refused() -> None:
    async def sink(_: PendingEvent) -> None: ...

    for bad in ({"qps": 0.0}, {"burst": 0}, {"capacity": 0}, {"in_flight": 0}):
        with pytest.raises(ValueError, match="qps must be positive"):
            EventRecorder(sink, **bad)  # type: ignore[arg-type]


def test_the_involved_object_of_a_body_without_metadata_is_empty_not_an_error() -> None:
    assert involved_object({}) == {"apiVersion": None, "kind": None, "metadata": {}}


def test_the_metrics_show_what_waits_and_what_was_dropped() -> None:
    from deployplane.controller.metrics import OperatorMetrics

    metrics = OperatorMetrics()

    async def sink(_: PendingEvent) -> None: ...

    recorder = EventRecorder(sink, capacity=2, on_drop=metrics.events_dropped.inc)
    metrics.watch_events(recorder)
    for i in range(3):
        recorder.record(body(f"r{i}"), CREATED)
    sample = metrics.registry.get_sample_value
    assert sample("deployplane_events_pending") == 2
    assert sample("deployplane_events_dropped_total") == 1
