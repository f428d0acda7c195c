"""The adapter around Kopf's watch (`deployplane.controller.kopfwatch`), driven through
Kopf's own `continuous_watch` / `infinite_watch` with only the HTTP call faked: a Kopf
that stops calling what the adapter wraps fails here, not in production."""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import AsyncIterator, Iterator
from typing import Any

import kopf
import pytest
from kopf._cogs.aiokits import aiotoggles
from kopf._cogs.clients import api, fetching, watching
from tests.support import kopfregistrations

import deployplane.controller.handlers  # noqa: F401  (installs the adapter)
from deployplane.controller import kopfwatch
from deployplane.kube.health import FailureClock
from deployplane.kube.retry import Backoff

RESOURCE = kopf.Resource("deployplane.io", "v1alpha1", "agentdeployments", namespaced=True)
LOGGER = logging.getLogger("test")


@pytest.fixture
def guard() -> Iterator[kopfwatch.WatchGuard]:
    saved = dict(vars(kopfwatch.GUARD))
    kopfwatch.GUARD.health = FailureClock()
    kopfwatch.GUARD.quick_ends = {}
    kopfwatch.GUARD.listed = set()
    kopfwatch.GUARD.backoff = Backoff(initial=1.0, maximum=30.0, jitter=0.2, rand=lambda: 0.0)
    try:
        yield kopfwatch.GUARD
    finally:
        vars(kopfwatch.GUARD).update(saved)


def settings() -> kopf.OperatorSettings:
    s = kopf.OperatorSettings()
    s.watching.initial_streaming = True  # no listing first: the watch call only
    s.watching.server_timeout = 300
    return s


async def test_a_watch_closed_at_once_again_and_again_backs_off(
    guard: kopfwatch.WatchGuard, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Kopf reopens a watch that ended at once; with nothing delivered within a second
    the adapter counts it a failure and waits, doubling: no hot loop."""
    opened: list[str] = []

    async def closed_at_once(url: str, **_: Any) -> AsyncIterator[Any]:
        opened.append(url)
        return
        yield  # an async generator that ends at once

    monkeypatch.setattr(api, "stream", closed_at_once)
    waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    slept: list[float] = []

    async def sleep(seconds: float) -> None:
        slept.append(seconds)
        if len(slept) == 5:
            waiter.set_result(None)  # Kopf pauses: the stream loop ends

    guard.sleep = sleep
    guard.on_pause = None
    async for _ in watching.continuous_watch(
        settings=settings(), resource=RESOURCE, namespace="ns", operator_pause_waiter=waiter
    ):
        pass
    assert slept == [1.0, 2.0, 4.0, 8.0, 16.0]
    assert len(opened) == 5, "one watch per backoff, not thousands"
    assert "watch agentdeployments in ns" in guard.health.failing()


async def test_a_watch_that_delivers_is_healthy_and_resets_the_backoff(
    guard: kopfwatch.WatchGuard, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = 0

    async def one_event_then_end(url: str, **_: Any) -> AsyncIterator[Any]:
        nonlocal calls
        calls += 1
        if calls == 2:
            obj = {"metadata": {"name": "a", "resourceVersion": "5"}}
            yield {"type": "MODIFIED", "object": obj}

    monkeypatch.setattr(api, "stream", one_event_then_end)
    waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    slept: list[float] = []

    async def sleep(seconds: float) -> None:
        slept.append(seconds)
        if len(slept) == 2:
            waiter.set_result(None)

    guard.sleep = sleep
    events = [
        e
        async for e in watching.continuous_watch(
            settings=settings(), resource=RESOURCE, namespace=None, operator_pause_waiter=waiter
        )
        if isinstance(e, dict) and e.get("type")
    ]
    assert [e["type"] for e in events] == ["MODIFIED"]
    assert slept == [1.0, 1.0], "the backoff starts over after a watch that delivered"


async def test_the_scope_is_the_namespaces_kopf_lists_our_kinds_in(
    guard: kopfwatch.WatchGuard, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What the probe's `scope` says comes from Kopf's own listings (its globs resolved),
    and only those of our kinds: Kopf lists namespaces and CRDs too."""
    listed: list[str] = []

    async def get(url: str, **_: Any) -> Any:
        listed.append(url)
        return {"items": [], "metadata": {"resourceVersion": "1"}}

    monkeypatch.setattr(api, "get", get)
    namespaces = kopf.Resource("", "v1", "namespaces", namespaced=False)

    async def list_once(resource: kopf.Resource, namespace: str | None) -> None:
        async for _ in fetching.fetch_objs(
            settings=settings(), resource=resource, namespace=namespace, logger=LOGGER
        ):
            pass

    assert guard.scope() == "nothing listed yet"
    await list_once(RESOURCE, "team-b")
    await list_once(RESOURCE, "team-a")
    await list_once(namespaces, None)  # Kopf's own: not a scope of ours
    assert guard.scope() == "team-a, team-b"
    await list_once(RESOURCE, None)  # cluster-wide
    assert guard.scope() == "every namespace"
    assert len(listed) == 4


async def test_kopfs_peering_pause_pauses_the_queue_and_its_resume_resumes_it(
    guard: kopfwatch.WatchGuard, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Kopf's pause toggle (what its peering flips) reaches the work queue through the
    future Kopf hands each stream; no log line is read."""

    async def long_watch(url: str, stopper: asyncio.Future[Any], **_: Any) -> AsyncIterator[Any]:
        await asyncio.wait([stopper])  # open until Kopf pauses (its stopper closes it)
        return
        yield

    monkeypatch.setattr(api, "stream", long_watch)
    paused: list[bool] = []
    guard.on_pause = paused.append
    toggles = aiotoggles.ToggleSet(any)
    peering = await toggles.make_toggle(False, name="peering")
    s = settings()
    s.watching.reconnect_backoff = 0.01

    async def consume() -> None:
        async for _ in watching.infinite_watch(
            settings=s, resource=RESOURCE, namespace="ns", operator_paused=toggles
        ):
            pass

    task = asyncio.create_task(consume())
    try:
        for _ in range(50):
            await asyncio.sleep(0.01)
            if paused:
                break
        assert paused == [False], "watching: the queue runs"
        await peering.turn_to(True)  # a peer of a higher priority appeared
        for _ in range(50):
            await asyncio.sleep(0.01)
            if len(paused) > 1:
                break
        assert paused[-1] is True
        await peering.turn_to(False)  # that peer is gone
        for _ in range(100):
            await asyncio.sleep(0.01)
            if paused[-1] is False:
                break
        assert paused[-1] is False
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


async def test_kopfs_own_streams_never_resume_the_queue(
    guard: kopfwatch.WatchGuard, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Kopf watches CRDs, namespaces and its peering objects whether paused or not: a
    stream of those starting must not resume a queue that peering paused."""

    async def closed(url: str, **_: Any) -> AsyncIterator[Any]:
        return
        yield

    monkeypatch.setattr(api, "stream", closed)
    paused: list[bool] = []
    guard.on_pause = paused.append
    waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    async def sleep(seconds: float) -> None:
        waiter.set_result(None)

    guard.sleep = sleep
    crds = kopf.Resource("apiextensions.k8s.io", "v1", "customresourcedefinitions")
    async for _ in watching.continuous_watch(
        settings=settings(), resource=crds, namespace=None, operator_pause_waiter=waiter
    ):
        pass
    assert paused == []


async def test_every_event_goes_on_to_kopf_unchanged(
    guard: kopfwatch.WatchGuard, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The adapter only looks: our kinds' events reach Kopf (and so the `kopf.on.event`
    handlers, the one way into the workers) as the apiserver sent them."""
    sent = [
        {"type": kind, "object": {"metadata": {"name": "a", "resourceVersion": version}}}
        for kind, version in (("ADDED", "5"), ("MODIFIED", "6"), ("DELETED", "7"))
    ]

    async def three_events(url: str, **_: Any) -> AsyncIterator[Any]:
        for event in sent:
            yield event

    monkeypatch.setattr(api, "stream", three_events)
    waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    seen: list[Any] = []
    async for raw in watching.continuous_watch(
        settings=settings(), resource=RESOURCE, namespace="ns", operator_pause_waiter=waiter
    ):
        if isinstance(raw, dict):  # not Kopf's own LISTED marker
            seen.append(raw)
        if len(seen) == len(sent):
            waiter.set_result(None)
    assert seen == sent


def test_kopfs_event_handler_hands_each_event_to_the_workers() -> None:
    """`on_event`, the handler Kopf calls for our kinds, is how events reach the workers."""
    from types import SimpleNamespace

    from deployplane.controller.handlers import on_event

    observed: list[tuple[str, str | None, Any]] = []
    workers = SimpleNamespace(observe=lambda *args: observed.append(args))
    runtime = SimpleNamespace(workers=workers, last_event={}, clock=lambda: 7.0)
    memo = kopf.Memo(runtime=runtime)
    body = {"metadata": {"name": "a"}}
    asyncio.run(on_event("AgentDeployment", {"type": "MODIFIED", "object": body}, memo))
    asyncio.run(on_event("Listener", {"type": None, "object": body}, memo))  # listed at start
    assert observed == [("AgentDeployment", "MODIFIED", body), ("Listener", None, body)]
    assert runtime.last_event == {"AgentDeployment": 7.0, "Listener": 7.0}


def test_every_event_handler_is_a_coroutine_so_kopf_runs_it_on_the_loop(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Kopf runs a sync handler in its executor's threads (its docs, "Async/await"):
    ours must be coroutines, so that the work queue (asyncio futures, plain dicts) is
    only touched by the loop."""
    from deployplane.controller import handlers

    with kopfregistrations.recorded(monkeypatch) as seen:
        handlers.register()
    events = [r for r in seen if r.decorator == "event"]
    assert events, "no event handler registered"
    for registration in events:
        fn = registration.fn
        assert inspect.iscoroutinefunction(getattr(fn, "func", fn)), registration.id


def test_the_wrapped_kopf_functions_are_the_ones_the_adapter_was_written_for() -> None:
    """Kopf's own functions (kept by `install`) have the recorded signatures; the
    operator refuses to start otherwise."""
    assert set(kopfwatch.WRAPPED) == {"watch_objs", "fetch_objs"}
    kopfwatch.check_signatures(kopfwatch.WRAPPED)


def test_a_changed_kopf_signature_stops_the_adapter_with_its_name() -> None:
    async def renamed(*, settings: Any, resource: Any, namespace: Any, pause_waiter: Any) -> Any:
        return None

    with pytest.raises(kopfwatch.KopfChanged, match=r"watch_objs\(\*, settings.*pause_waiter"):
        kopfwatch.check_signatures({"watch_objs": renamed})
