"""The one adapter around Kopf's internals, and the only module that imports `kopf._*`
(an import contract in pyproject.toml and `tests/unit/codebase/test_import_contracts.py`).

It wraps, in place, the two calls Kopf's `continuous_watch` makes:
`kopf._cogs.clients.watching.watch_objs` and `fetching.fetch_objs`. Kopf's public
surface (`kopf`, `kopf.on`, `kopf.testing`, the settings) has no way to do what it adds
(docs/architecture.md, "What Kopf lacks", says so in upstream-ready words):

- a watch that ends within `QUICK_END_SECONDS` having delivered nothing (a proxy or an
  apiserver closing the stream at once, over and over) counts as a failure and waits
  an exponential backoff with jitter before Kopf reopens it: Kopf's
  `settings.watching.reconnect_backoff` is one fixed delay (0.1 s), a hot loop;
- every listing or watch that fails, and every one that works, is told to a
  `FailureClock` (`watch <plural>`), which the `kopf.on.probe` handler reads: no public
  hook tells a probe that Kopf's own streams are failing;
- Kopf's peering pauses the watch through a future it hands each stream (done when
  the operator is paused); the adapter pauses the work queue with it, and resumes it
  when Kopf opens a stream again (it only does so unpaused): no public pause hook;
- the namespaces it lists our kinds in (every one, or which, its globs resolved) are
  kept for the probe's `scope`: no public hook says what Kopf watches.

Guarded against Kopf changing underneath: Kopf is pinned to the minor the tests ran
(pyproject.toml), the wrappers take Kopf's keyword arguments by name (a renamed one is
a TypeError, never a silent None), and `install()` compares the wrapped functions'
signatures with `WRAPPED_SIGNATURES` first, refusing to start on any difference
(`tests/unit/controller/test_kopfwatch.py` runs the same check, and drives Kopf's own
`continuous_watch` through the wrappers).

It only looks: every event it sees goes on to Kopf unchanged, and so to the
`kopf.on.event` handlers (`handlers.on_event`), the one way events reach the workers.
Listing, watching, reconnecting, logging in again and pausing stay Kopf's.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from importlib import metadata
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
    listed: set[str | None] = field(default_factory=set)
    """The namespaces Kopf has listed our kinds in (None: every namespace, one
    cluster-wide listing), globs resolved: the operator's scope as it really is."""

    def scope(self) -> str:
        """The namespaces listed so far, in words (the probe's `scope`)."""
        if None in self.listed:
            return "every namespace"
        named = sorted(ns for ns in self.listed if ns is not None)
        return ", ".join(named) if named else "nothing listed yet"

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


WRAPPED_SIGNATURES: Final = {
    "watch_objs": "(*, settings, resource, namespace, since=None, operator_pause_waiter)",
    "fetch_objs": "(*, settings, resource, namespace, logger)",
}
"""The parameters of the wrapped Kopf functions, as tested: Kopf 1.45."""


WRAPPED: dict[str, Callable[..., Any]] = {}
"""Kopf's own functions, once `install()` has wrapped them (for the signature test)."""


class KopfChanged(RuntimeError):
    """Kopf's wrapped functions are not what the adapter was written for."""


def signature_of(fn: Callable[..., Any]) -> str:
    """`fn`'s parameters without annotations, e.g. `(*, settings, since=None)`."""
    parameters = inspect.signature(fn).parameters.values()
    return str(
        inspect.Signature([p.replace(annotation=inspect.Parameter.empty) for p in parameters])
    )


def check_signatures(functions: dict[str, Callable[..., Any]]) -> None:
    """Raise `KopfChanged` naming every wrapped function whose parameters changed."""
    changed = [
        f"{name}{signature_of(fn)} (expected {name}{WRAPPED_SIGNATURES[name]})"
        for name, fn in functions.items()
        if signature_of(fn) != WRAPPED_SIGNATURES[name]
    ]
    if changed:
        raise KopfChanged(
            f"Kopf {kopf_version()} changed what deployplane's watch adapter wraps: "
            + "; ".join(changed)
        )


def kopf_version() -> str:
    try:
        return metadata.version("kopf")
    except metadata.PackageNotFoundError:
        return "(unknown version)"


def _what(resource: Any, namespace: str | None) -> str:
    plural = getattr(resource, "plural", str(resource))
    return f"watch {plural}" + (f" in {namespace}" if namespace else "")


def install(guard: WatchGuard = GUARD) -> None:
    """Wrap Kopf's listing and watch calls (once per process); `KopfChanged` if they are
    not the functions the adapter was written for."""
    if getattr(watching.watch_objs, "__wrapped_by_deployplane__", False):
        return
    watch_objs, fetch_objs = watching.watch_objs, fetching.fetch_objs
    check_signatures({"watch_objs": watch_objs, "fetch_objs": fetch_objs})
    WRAPPED.update(watch_objs=watch_objs, fetch_objs=fetch_objs)
    watching.watch_objs = _guarded_watch(watch_objs, guard)
    fetching.fetch_objs = _guarded_fetch(fetch_objs, guard)


def _guarded_watch(
    watch_objs: Callable[..., AsyncIterator[Any]], guard: WatchGuard
) -> Callable[..., AsyncIterator[Any]]:
    """Kopf's `watch_objs`, looked at: health, quick-end backoff, pause."""

    async def guarded_watch(
        *,
        settings: Any,
        resource: Any,
        namespace: Any,
        since: str | None = None,
        operator_pause_waiter: Any,
    ) -> AsyncIterator[Any]:
        # Typed as Kopf's internals are not: `Any` where their types are Kopf's own.
        what = _what(resource, namespace)
        waiter: asyncio.Future[Any] | None = operator_pause_waiter
        ours = getattr(resource, "group", None) == GROUP
        # Only our kinds' streams follow the pause: Kopf's own (peering, namespaces,
        # CRDs) run paused or not, and their start says nothing about it.
        if ours and waiter is not None and not waiter.done():
            guard.paused(False)  # Kopf opens a stream only while not paused
            waiter.add_done_callback(guard.pause_waiter_done)
        started, events = guard.clock(), 0
        try:
            async for raw in watch_objs(
                settings=settings,
                resource=resource,
                namespace=namespace,
                since=since,
                operator_pause_waiter=operator_pause_waiter,
            ):
                events += 1
                if events == 1:
                    guard.health.succeeded(what)
                yield raw
        except Exception as exc:
            guard.health.failed(what, f"{type(exc).__name__}: {exc}")
            raise
        if waiter is None or not waiter.done():
            await guard.watched(what, started, events)

    guarded_watch.__wrapped_by_deployplane__ = True  # type: ignore[attr-defined]
    return guarded_watch


def _guarded_fetch(
    fetch_objs: Callable[..., AsyncIterator[Any]], guard: WatchGuard
) -> Callable[..., AsyncIterator[Any]]:
    """Kopf's `fetch_objs`, looked at: health."""

    async def guarded_fetch(
        *, settings: Any, resource: Any, namespace: Any, logger: Any
    ) -> AsyncIterator[Any]:
        what = _what(resource, namespace)
        if getattr(resource, "group", None) == GROUP:
            guard.listed.add(namespace or None)
        try:
            async for chunk, version in fetch_objs(
                settings=settings, resource=resource, namespace=namespace, logger=logger
            ):
                yield chunk, version
        except Exception as exc:
            guard.health.failed(what, f"listing: {type(exc).__name__}: {exc}")
            raise
        guard.health.succeeded(what)

    return guarded_fetch
