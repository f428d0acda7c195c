"""A work queue of resource keys, the controller-runtime shape: watch events put keys on
it, a bounded pool of workers takes them off, and each pass puts its key back after the
delay the pass asked for. No Kopf code, no Kubernetes: keys are any hashable values.

Why a queue and not one long-lived task per resource: an idle resource is then an entry
in a heap instead of a handful of tasks, coroutines and events (1,000 resources held
~16 MB and ~200,000 gc-tracked objects that way), and the event loop schedules a fixed
number of workers however many resources there are.

The rules (the delays themselves are the schedule's, `deployplane.reconcile.schedule`):
- a key is queued at most once (de-duplicated), and is never taken by two workers at
  once: added while a worker holds it, it is queued again when that worker is done;
- `add` makes a key due now, cancelling any later visit it had (a change of spec cuts
  a poll or resync wait short); `add_after` keeps the earlier of two due times;
- keys are taken in the order they became due (first in, first out), so a resource
  re-queued at once by its own pass waits behind everything already due;
- `pause` holds every key back (a pass already running finishes) until `resume`;
- `stop` wakes every waiting worker with None.
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import itertools
import time
from collections import deque
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)


class WorkQueue(Generic[K]):
    def __init__(self, *, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._ready: deque[K] = deque()
        self._queued: set[K] = set()
        """Keys in `_ready` that count (a forgotten key may linger there, skipped)."""
        self._active: set[K] = set()
        self._dirty: set[K] = set()
        """Added while a worker held them: due as soon as it is done."""
        self._due: dict[K, float] = {}
        self._heap: list[tuple[float, int, K]] = []
        """(due time, sequence, key); an entry whose time is not `_due[key]` is stale."""
        self._seq = itertools.count()
        self._wakeup = asyncio.Event()
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
        """Due now (any later visit it had is replaced by this one)."""
        if self._stopped:
            return
        self._due.pop(key, None)
        if key in self._active:
            self._dirty.add(key)
        elif key not in self._queued:
            self._queued.add(key)
            self._ready.append(key)
            self._wakeup.set()

    def add_after(self, key: K, delay: float) -> None:
        """Due in `delay` seconds, unless it is due sooner already."""
        if delay <= 0:
            self.add(key)
            return
        if self._stopped or key in self._queued or key in self._dirty:
            return
        when = self._clock() + delay
        if self._due.get(key, when + 1) <= when:
            return
        self._due[key] = when
        heapq.heappush(self._heap, (when, next(self._seq), key))
        self._wakeup.set()  # a worker may be sleeping until a later due time

    def forget(self, key: K) -> None:
        """The resource is gone: drop whatever visit it had queued."""
        self._queued.discard(key)
        self._dirty.discard(key)
        self._due.pop(key, None)

    def done(self, key: K, requeue_after: float | None = None) -> None:
        """A worker finished `key`: due again at once if it was added meanwhile, else in
        `requeue_after` seconds (None: only when something adds it)."""
        self._active.discard(key)
        if key in self._dirty:
            self._dirty.discard(key)
            self.add(key)
        elif requeue_after is not None:
            self.add_after(key, requeue_after)

    def stop(self) -> None:
        self._stopped = True
        self._wakeup.set()

    def pause(self, paused: bool = True) -> None:
        """Hand out no key while paused (another operator has the lead); keys still queue."""
        self._paused = paused
        self._wakeup.set()

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
                    return key
            timeout = self._heap[0][0] - self._clock() if self._heap and not self._paused else None
            self._wakeup.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wakeup.wait(), timeout)
        return None

    def _promote(self) -> None:
        """Move every key whose due time has come to the ready queue."""
        now = self._clock()
        while self._heap and self._heap[0][0] <= now:
            when, _, key = heapq.heappop(self._heap)
            if self._due.get(key) == when:
                del self._due[key]
                self.add(key)
