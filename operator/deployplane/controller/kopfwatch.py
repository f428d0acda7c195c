"""A thin adapter around Kopf's watch, the one place deployplane reaches into Kopf's
internals (`kopf._cogs.clients.watching.watch_objs` and `fetching.fetch_objs`, the
calls Kopf's `continuous_watch` makes, wrapped in place; Kopf is pinned below its next
major in pyproject, and `tests/unit/test_kopfwatch.py` drives Kopf's own
`continuous_watch` through it, so a Kopf that changes them fails a test, not
production). It adds what Kopf's watch lacks:

- a watch that ends within `QUICK_END_SECONDS` having delivered nothing (a proxy or an
  apiserver closing the stream at once, over and over) counts as a failure and waits
  an exponential backoff with jitter before Kopf reopens it: Kopf reopens at once, a
  hot loop that keeps a core busy;
- every listing or watch that fails, and every one that works, is told to a
  `FailureClock` (`watch <plural>`), which the probes read;
- Kopf's peering pauses the watch through a future it hands each stream (done when
  the operator is paused); the adapter pauses the work queue with it, and resumes it
  when Kopf opens a stream again (it only does so unpaused). No log line is read.

It only looks: every event it sees goes on to Kopf unchanged, and so to the
`kopf.on.event` handlers (`handlers.on_event`), the one way events reach the workers.
Listing, watching, reconnecting, logging in again and pausing stay Kopf's.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Final

from kopf._cogs.clients import fetching, watching

from deployplane.kube.health import FailureClock
from deployplane.kube.paths import GROUP
from deployplane.kube.retry import Backoff

log = logging.getLogger("deployplane.watch")

QUICK_END_SECONDS: Final = 1.0
"""A watch that ends sooner than this with no event is a failure, not a renewal."""


@dataclass
class WatchGuard:
    """What the wrapped calls report to; one per process (`GUARD`)."""

    health: FailureClock = field(default_factory=FailureClock)
    backoff: Backoff = field(default_factory=lambda: Backoff(initial=1.0, maximum=30.0))
    on_pause: Callable[[bool], None] | None = None
    """Told True when Kopf pauses the operator (peering), False when it watches again."""
    sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep
    clock: Callable[[], float] = field(default=lambda: asyncio.get_running_loop().time())
    quick_ends: dict[str, int] = field(default_factory=dict)
    """Watches (by `what`) ending at once with nothing, in a row."""

    def paused(self, paused: bool) -> None:
        if self.on_pause is not None:
            self.on_pause(paused)

    def pause_waiter_done(self, waiter: asyncio.Future[Any]) -> None:
        """Kopf's pause future for a stream: done when paused, cancelled when the
        stream merely ended."""
        if not waiter.cancelled():
            self.paused(True)

    async def watched(self, what: str, started: float, events: int) -> None:
        """A stream ended normally: a renewal, or (quick and empty) a failure."""
        if events or self.clock() - started >= QUICK_END_SECONDS:
            self.quick_ends.pop(what, None)
            self.health.succeeded(what)
            return
        count = self.quick_ends.get(what, 0)
        self.quick_ends[what] = count + 1
        delay = self.backoff.delay(count)
        self.health.failed(what, "the watch ended at once with no event")
        log.warning(
            "%s ended at once with no event (%d in a row); again in %.1fs", what, count + 1, delay
        )
        await self.sleep(delay)


GUARD = WatchGuard()


def _what(resource: Any, namespace: str | None) -> str:
    plural = getattr(resource, "plural", str(resource))
    return f"watch {plural}" + (f" in {namespace}" if namespace else "")


def install(guard: WatchGuard = GUARD) -> None:
    """Wrap Kopf's listing and watch calls (once per process)."""
    if getattr(watching.watch_objs, "__wrapped_by_deployplane__", False):
        return
    watch_objs, fetch_objs = watching.watch_objs, fetching.fetch_objs

    async def guarded_watch(**kwargs: Any) -> AsyncIterator[Any]:
        what = _what(kwargs.get("resource"), kwargs.get("namespace"))
        waiter = kwargs.get("operator_pause_waiter")
        ours = getattr(kwargs.get("resource"), "group", None) == GROUP
        # Only our kinds' streams follow the pause: Kopf's own (peering, namespaces,
        # CRDs) run paused or not, and their start says nothing about it.
        if ours and waiter is not None and not waiter.done():
            guard.paused(False)  # Kopf opens a stream only while not paused
            waiter.add_done_callback(guard.pause_waiter_done)
        started, events = guard.clock(), 0
        try:
            async for raw in watch_objs(**kwargs):
                events += 1
                if events == 1:
                    guard.health.succeeded(what)
                yield raw
        except Exception as exc:
            guard.health.failed(what, f"{type(exc).__name__}: {exc}")
            raise
        if waiter is None or not waiter.done():
            await guard.watched(what, started, events)

    async def guarded_fetch(**kwargs: Any) -> AsyncIterator[Any]:
        what = _what(kwargs.get("resource"), kwargs.get("namespace"))
        try:
            async for chunk, version in fetch_objs(**kwargs):
                yield chunk, version
        except Exception as exc:
            guard.health.failed(what, f"listing: {type(exc).__name__}: {exc}")
            raise
        guard.health.succeeded(what)

    guarded_watch.__wrapped_by_deployplane__ = True  # type: ignore[attr-defined]
    watching.watch_objs = guarded_watch
    fetching.fetch_objs = guarded_fetch
