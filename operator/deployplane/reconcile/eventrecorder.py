"""Kubernetes Events, posted in the background at a bounded rate: client-go's recorder
shape. No Kopf, no HTTP: the sink that creates an Event is handed in.

Why a recorder and not a post per event: an Event is an apiserver write like any
other (CPU and an etcd write), and the operator makes two per new resource
(`Created`, then `Deployed`). Posted as they happen, a burst of 1,000 new resources
sends 2,000 Events in the same seconds as the writes that make the resources Ready,
and slows those down (`events_posted_1000_s` of bench/operator.py is how long the
Events trail behind). client-go's recorder posts from a bounded queue of 1,000, one at a
time, and drops what does not fit; this one:

- posts at most `qps` Events a second once a `burst` of them is spent (a token
  bucket), so a quiet operator's Events go out at once and a burst's go out behind the
  writes that matter, spread over the following minute or two;
- keeps Events in the order they were recorded, each stamped with the time it was
  recorded (not the time it was posted);
- holds at most `capacity` waiting; beyond that a new Event is dropped and counted
  (`dropped`, the metric `deployplane_events_dropped_total`): an Event is information,
  never a reason to hold memory without bound or to fail anything;
- never raises into the caller: `record` only queues, a failed post is logged and the
  Event is lost, as with client-go;
- on `stop`, posts what is waiting for at most `drain_seconds`, then drops the rest.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import logging
import time
from collections import deque
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from deployplane.reconcile.outcome import EventRecord

log = logging.getLogger("deployplane.events")

_INVOLVED_METADATA: Final = ("namespace", "name", "uid")


@dataclass(frozen=True)
class PendingEvent:
    """An Event waiting to be posted: what it is about, what it says, and when."""

    involved: Mapping[str, Any]
    """apiVersion, kind and the namespace/name/uid metadata of the object: not its body,
    which may be large and is replaced by every watch event."""
    event: EventRecord
    recorded_at: dt.datetime


EventSink = Callable[[PendingEvent], Awaitable[None]]
"""Creates the Event in Kubernetes (`KubernetesApi.post_event`)."""


def involved_object(body: Mapping[str, Any]) -> dict[str, Any]:
    """The parts of a watched body an Event names."""
    meta = body.get("metadata") or {}
    return {
        "apiVersion": body.get("apiVersion"),
        "kind": body.get("kind"),
        "metadata": {k: meta[k] for k in _INVOLVED_METADATA if k in meta},
    }


class TokenBucket:
    """`rate` tokens a second, at most `burst` saved up; starts full."""

    def __init__(self, rate: float, burst: int, clock: Callable[[], float]) -> None:
        self.rate, self.burst, self._clock = rate, float(burst), clock
        self._tokens = float(burst)
        self._stamp = clock()

    def take(self) -> float:
        """Take a token if there is one (0.0), else seconds until there will be."""
        now = self._clock()
        self._tokens = min(self.burst, self._tokens + (now - self._stamp) * self.rate)
        self._stamp = now
        if self._tokens >= 1.0:
            self._tokens -= 1.0
            return 0.0
        return (1.0 - self._tokens) / self.rate


class EventRecorder:
    """Queues Events and posts them from one background task; see the module text."""

    def __init__(
        self,
        sink: EventSink,
        *,
        qps: float = 10.0,
        burst: int = 50,
        capacity: int = 10_000,
        in_flight: int = 4,
        on_drop: Callable[[int], None] | None = None,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        if qps <= 0 or burst < 1 or capacity < 1 or in_flight < 1:
            raise ValueError("qps must be positive; burst, capacity and in_flight at least 1")
        self.sink = sink
        self.capacity = capacity
        self.on_drop = on_drop
        self.dropped = 0
        self._bucket = TokenBucket(qps, burst, clock)
        self._sleep = sleep
        self._waiting: deque[PendingEvent] = deque()
        self._wakeup = asyncio.Event()
        self._slots = asyncio.Semaphore(in_flight)
        self._posting: set[asyncio.Task[None]] = set()
        self._task: asyncio.Task[None] | None = None
        self._stopping = False

    def __len__(self) -> int:
        """Events recorded and not yet posted (those being posted included)."""
        return len(self._waiting) + len(self._posting)

    def record(self, body: Mapping[str, Any], event: EventRecord) -> None:
        """Queue an Event about `body` (a watched object); never blocks, never raises."""
        if self._stopping or len(self._waiting) >= self.capacity:
            self._drop(1, event, "the recorder is full" if not self._stopping else "stopping")
            return
        now = dt.datetime.now(dt.UTC)
        self._waiting.append(PendingEvent(involved_object(body), event, now))
        self._wakeup.set()

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name="deployplane-events")

    def ended(self) -> bool:
        """Whether the posting task ended without being stopped (nothing posts then)."""
        return self._task is not None and self._task.done() and not self._stopping

    async def stop(self, drain_seconds: float = 5.0) -> None:
        """Post what waits for at most `drain_seconds`, then drop the rest."""
        self._stopping = True
        self._wakeup.set()
        if self._task is not None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(self._task), drain_seconds)
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        for task in list(self._posting):
            task.cancel()
        await asyncio.gather(*self._posting, return_exceptions=True)
        if self._waiting:
            left = len(self._waiting)
            self._waiting.clear()
            self._drop(left, None, "the operator stopped")

    async def _run(self) -> None:
        while True:
            if not self._waiting:
                if self._stopping:
                    break
                self._wakeup.clear()
                await self._wakeup.wait()
                continue
            if wait := self._bucket.take():
                await self._sleep(wait)
                continue
            await self._slots.acquire()
            pending = self._waiting.popleft()
            task = asyncio.create_task(self._post(pending))
            self._posting.add(task)
            task.add_done_callback(self._posting.discard)
        await asyncio.gather(*self._posting, return_exceptions=True)

    async def _post(self, pending: PendingEvent) -> None:
        try:
            await self.sink(pending)
        except Exception as exc:  # an Event lost is no reason to fail anything
            meta = pending.involved.get("metadata") or {}
            log.warning(
                "%s/%s: event %s not posted: %s",
                meta.get("namespace"),
                meta.get("name"),
                pending.event.reason,
                exc,
            )
        finally:
            self._slots.release()

    def _drop(self, count: int, event: EventRecord | None, why: str) -> None:
        first = self.dropped == 0
        self.dropped += count
        if self.on_drop is not None:
            self.on_drop(count)
        # The first drop says why; later ones are counted in the metric, not logged each.
        if first:
            what = f"event {event.reason}" if event is not None else f"{count} events"
            log.warning("%s dropped: %s (drops are counted from now on)", what, why)
