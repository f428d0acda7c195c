"""A work queue of resource keys, the controller-runtime shape: watch events put keys on
it, a bounded pool of workers takes them off, and each pass puts its key back after the
delay the pass asked for. No Kopf code, no Kubernetes: keys are any hashable values.

Why a queue and not one long-lived task per resource: an idle resource is then an entry
in a heap instead of a handful of tasks, coroutines and events (memory and gc-tracked
objects by the thousand), and the event loop schedules a fixed
number of workers however many resources there are.

The rules (the delays themselves are the schedule's, `deployplane.reconcile.schedule`):
- a key is queued at most once (de-duplicated), and is never taken by two workers at
  once: added while a worker holds it, it is queued again when that worker is done;
- `add` makes a key due now, cancelling any later pass it had (a change of spec cuts
  a poll or resync wait short); `add_after` keeps the earlier of two due times;
- keys are taken in the order they became due (first in, first out), so a resource
  re-queued at once by its own pass waits behind everything already due;
- every delay `done` is given is stretched by up to `jitter` (resources created
  together do not poll and resync together forever);
- `done(..., rate_limited=True)` (a pass that failed) is also held to a global
  rate (`retry_qps` after a `retry_burst`), beside the per-item backoff the delay
  carries: client-go's default controller rate limiter, the max of the two, so 1,000
  resources failing at once come back spread out, not in lockstep;
- an `add` wakes one waiting worker, not all of them; one waiting worker at most
  sleeps until the next delayed key is due;
- `pause` holds every key back (a pass already running finishes) until `resume`;
- `stop` wakes every waiting worker with None.
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import itertools
import random
import time
from collections import deque
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)


class WorkQueue(Generic[K]):
    def __init__(
        self,
        *,
        clock: Callable[[], float] = time.monotonic,
        retry_qps: float = 10.0,
        retry_burst: int = 100,
        jitter: float = 0.0,
        rand: Callable[[], float] = random.random,
    ) -> None:
        self._clock = clock
        self._jitter, self._rand = jitter, rand
        """Every requeue delay of `done` is stretched by up to this fraction."""
        self._retry_rate, self._retry_burst = retry_qps, float(retry_burst)
        self._retry_tokens = float(retry_burst)
        self._retry_stamp = clock()
        self._ready: deque[K] = deque()
        self._queued: set[K] = set()
        """Keys in `_ready` that count (a forgotten key may linger there, skipped)."""
        self._active: set[K] = set()
        self._added_while_processing: set[K] = set()
        """Added while a worker held them: due as soon as it is done. (Not client-go's
        `dirty`, which holds every key waiting for a worker, queued or held.)"""
        self._due: dict[K, float] = {}
        self._heap: list[tuple[float, int, K]] = []
        """(due time, sequence, key); an entry whose time is not `_due[key]` is stale."""
        self._seq = itertools.count()
        self._waiters: deque[asyncio.Future[None]] = deque()
        """Workers waiting for a key, first come first woken."""
        self._timer: asyncio.Future[None] | None = None
        """The one waiter that sleeps until the earliest delayed key is due."""
        self._stopped = False
        self._paused = False

    def __len__(self) -> int:
        """Keys due now or later (not those being processed)."""
        return len(self._queued) + len(self._due.keys() - self._queued)

    def due_now(self) -> int:
        """Keys a worker may take at once (the delayed ones whose time has come included)."""
        self._promote()
        return len(self._queued)

    def add(self, key: K) -> None:
        """Due now (any later pass it had is replaced by this one)."""
        if self._stopped:
            return
        self._due.pop(key, None)
        if key in self._active:
            self._added_while_processing.add(key)
        elif key not in self._queued:
            self._queued.add(key)
            self._ready.append(key)
            self._wake_one()

    def add_after(self, key: K, delay: float) -> None:
        """Due in `delay` seconds, unless it is due sooner already."""
        if delay <= 0:
            self.add(key)
            return
        if self._stopped or key in self._queued or key in self._added_while_processing:
            return
        when = self._clock() + delay
        if self._due.get(key, when + 1) <= when:
            return
        self._due[key] = when
        earliest = not self._heap or when < self._heap[0][0]
        heapq.heappush(self._heap, (when, next(self._seq), key))
        if earliest:  # the timer sleeps until a later due time, or nobody sleeps on one
            if self._timer is not None and not self._timer.done():
                self._timer.set_result(None)
            else:
                self._wake_one()

    def drop(self, key: K) -> None:
        """The resource is gone: drop whatever pass it had queued. (Not client-go's
        `Forget`, which only resets a key's backoff: here the schedule keeps the
        backoff, and a dropped key is no longer queued at all.)"""
        self._queued.discard(key)
        self._added_while_processing.discard(key)
        self._due.pop(key, None)

    def done(
        self, key: K, requeue_after: float | None = None, *, rate_limited: bool = False
    ) -> None:
        """A worker finished `key`: due again at once if it was added meanwhile, else in
        `requeue_after` seconds (None: only when something adds it). `rate_limited`:
        the pass failed, and its retry also waits for the global retry rate."""
        self._active.discard(key)
        if key in self._added_while_processing:
            self._added_while_processing.discard(key)
            self.add(key)
        elif requeue_after is not None:
            requeue_after *= 1.0 + self._jitter * self._rand()
            if rate_limited:
                requeue_after = max(requeue_after, self._retry_slot())
            self.add_after(key, requeue_after)

    def _retry_slot(self) -> float:
        """Seconds until the global retry bucket has a token for this retry, which it
        reserves (client-go's BucketRateLimiter: `Reserve().Delay()`)."""
        now = self._clock()
        elapsed = max(0.0, now - self._retry_stamp)
        self._retry_stamp = now
        self._retry_tokens = min(self._retry_burst, self._retry_tokens + elapsed * self._retry_rate)
        self._retry_tokens -= 1.0
        return 0.0 if self._retry_tokens >= 0 else -self._retry_tokens / self._retry_rate

    def stop(self) -> None:
        self._stopped = True
        self._wake_all()

    def pause(self, paused: bool = True) -> None:
        """Hand out no key while paused (another operator has the lead); keys still queue."""
        self._paused = paused
        self._wake_all()

    def _wake_one(self) -> None:
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                return

    def _wake_all(self) -> None:
        while self._waiters:
            self._wake_one()

    @property
    def paused(self) -> bool:
        return self._paused

    async def get(self) -> K | None:
        """The next due key (the caller must call `done` with it); None once stopped."""
        while not self._stopped:
            self._promote()
            while self._ready and not self._paused:
                key = self._ready.popleft()
                if key in self._queued:
                    self._queued.discard(key)
                    self._active.add(key)
                    if self._ready or (self._heap and self._timer is None):
                        self._wake_one()  # more to hand out, or nobody keeps the time
                    return key
            await self._wait()
        return None

    async def _wait(self) -> None:
        """Sleep until woken; the first to find no timer kept also keeps it (sleeps at
        most until the earliest delayed key is due)."""
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        timeout = None
        if self._heap and not self._paused and self._timer is None:
            timeout = max(0.0, self._heap[0][0] - self._clock())
            self._timer = waiter
        self._waiters.append(waiter)
        try:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(waiter, timeout)
        finally:
            if self._timer is waiter:
                self._timer = None
            with contextlib.suppress(ValueError):
                self._waiters.remove(waiter)

    def _promote(self) -> None:
        """Move every key whose due time has come to the ready queue."""
        now = self._clock()
        while self._heap and self._heap[0][0] <= now:
            when, _, key = heapq.heappop(self._heap)
            if self._due.get(key) == when:
                del self._due[key]
                self.add(key)
