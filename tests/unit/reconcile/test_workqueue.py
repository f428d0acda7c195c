"""The work queue under the workers: de-duplication, delays, wake on change, order,
never two workers on one key, stop. A fake clock: no sleeping, no timed assertions."""

from __future__ import annotations

import asyncio

from deployplane.reconcile.workqueue import WorkQueue


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def queue() -> tuple[WorkQueue[str], Clock]:
    clock = Clock()
    return WorkQueue(clock=clock), clock


async def drain(q: WorkQueue[str]) -> list[str]:
    """Every key due now, each marked done without a requeue."""
    taken: list[str] = []
    while q.due_now():  # never waits: only what is due now
        key = await q.get()
        assert key is not None
        taken.append(key)
        q.done(key)
    return taken


async def test_a_key_added_twice_is_queued_once() -> None:
    q, _ = queue()
    for key in ("a", "b", "a", "a"):
        q.add(key)
    assert await drain(q) == ["a", "b"]


async def test_keys_come_out_first_in_first_out_and_a_requeued_key_waits_its_turn() -> None:
    q, _ = queue()
    for key in ("a", "b", "c"):
        q.add(key)
    first = await q.get()
    assert first == "a"
    q.done("a", requeue_after=0)  # asked to come back at once: behind b and c
    assert await drain(q) == ["b", "c", "a"]


async def test_a_delayed_key_is_not_due_before_its_time() -> None:
    q, clock = queue()
    q.add_after("a", 5.0)
    q.add("b")
    assert await drain(q) == ["b"]
    clock.now += 4.9
    assert await drain(q) == []
    clock.now += 0.2
    assert await drain(q) == ["a"]


async def test_of_two_delays_the_earlier_one_holds() -> None:
    q, clock = queue()
    q.add_after("a", 30.0)
    q.add_after("a", 2.0)
    q.add_after("a", 10.0)
    clock.now += 2.0
    assert await drain(q) == ["a"]
    clock.now += 30.0
    assert await drain(q) == [], "the stale later entries never fire"


async def test_a_change_cuts_a_delay_short() -> None:
    """A resync 600 s away, then the spec changes: the key is due now, once."""
    q, clock = queue()
    q.add_after("a", 600.0)
    q.add("a")
    assert await drain(q) == ["a"]
    clock.now += 600.0
    assert await drain(q) == []


async def test_a_key_added_while_a_worker_holds_it_waits_for_that_worker() -> None:
    q, _ = queue()
    q.add("a")
    assert await q.get() == "a"
    q.add("a")  # a watch event while the pass runs
    assert q.due_now() == 0, "never handed to a second worker meanwhile"
    q.done("a", requeue_after=30.0)  # the pass asked for 30 s, but a change came in
    assert await drain(q) == ["a"]


async def test_a_worker_waiting_for_work_wakes_when_a_key_is_added() -> None:
    q, _ = queue()
    waiting = asyncio.create_task(q.get())
    await asyncio.sleep(0)
    assert not waiting.done()
    q.add("a")
    assert await waiting == "a"


async def test_a_forgotten_key_is_dropped_wherever_it_was() -> None:
    q, clock = queue()
    q.add("a")
    q.add_after("b", 1.0)
    q.add("c")
    q.drop("a")
    q.drop("b")
    clock.now += 1.0
    assert await drain(q) == ["c"]
    q.add("a")
    assert await drain(q) == ["a"], "added again once it is back"


async def test_stop_wakes_every_waiting_worker_with_none() -> None:
    q, _ = queue()
    waiting = [asyncio.create_task(q.get()) for _ in range(3)]
    await asyncio.sleep(0)
    q.stop()
    assert await asyncio.gather(*waiting) == [None, None, None]
    q.add("a")
    assert await q.get() is None


async def test_length_counts_keys_due_now_and_later() -> None:
    q, _ = queue()
    q.add("a")
    q.add_after("b", 5.0)
    q.add_after("a", 5.0)  # due now already: not counted twice
    assert len(q) == 2


async def test_a_paused_queue_hands_out_nothing_until_resumed() -> None:
    q, _ = queue()
    q.pause()
    q.add("a")
    waiting = asyncio.create_task(q.get())
    for _ in range(5):
        await asyncio.sleep(0)
    assert not waiting.done()
    q.pause(False)
    assert await waiting == "a"
