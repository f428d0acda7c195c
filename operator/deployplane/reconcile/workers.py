"""The resources a controller watches, and a bounded pool of workers over its queue.

Kopf's watch (`deployplane.controller.handlers`, one event handler per kind) hands
every watch event to `Workers.observe` (kind, event type, body); `observe` keeps the
latest lean body of each resource and queues its key when there is something to do:
a resource never seen, a spec or pause annotation the last pass has not seen, a
deletion with our finalizer on, or a status someone else wrote (a status wiped or
edited by hand is repaired on the event that carried it). A worker takes a key, runs
one pass (or, for an object being deleted, finalizes and then takes our finalizer off),
and hands the key back to the queue as the pass's `Result` says (`Workers.finish`).
Status writes of our own come back as watch events too, and queue nothing
(`deployplane.reconcile.resourcestate` tells them apart): a pass is asked for by the schedule,
not by our echoes.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final, Protocol

from deployplane.reconcile.conditions import Reason
from deployplane.reconcile.finalizer import FINALIZER, has_finalizer, is_deleting
from deployplane.reconcile.outcome import EventReason, EventRecord
from deployplane.reconcile.passes import PassRunner
from deployplane.reconcile.resourcestate import ResourceState, is_paused
from deployplane.reconcile.schedule import Result, State
from deployplane.reconcile.usage import (
    Dependency,
    ObjectLister,
    ReadyWatch,
    in_use_message,
    listed_users,
    user_name,
)
from deployplane.reconcile.workqueue import WorkQueue

log = logging.getLogger("deployplane.workers")

REQUEUE_JITTER: Final = 0.1
"""Every requeue (poll, retry, resync) waits up to 10% longer, at random."""

Key = tuple[str, str, str, str]
"""(kind, namespace, name, uid): a resource deleted and re-created under the same name
is another resource, whose state (its external id above all) starts afresh."""

_METADATA: Final = (
    "namespace",
    "name",
    "uid",
    "generation",
    "resourceVersion",
    "annotations",
    "finalizers",
    "deletionTimestamp",
)
"""What a pass, a finalizer or an Event needs of the metadata (not managedFields)."""


class EventSink(Protocol):
    def record(self, body: Mapping[str, Any], event: EventRecord) -> None:
        """Queue an Event about the object (the body as `observe` kept it); never blocks
        (`deployplane.reconcile.eventrecorder.EventRecorder`)."""


class FinalizerSink(Protocol):
    async def remove_finalizer(
        self, plural: str, namespace: str, name: str, finalizer: str
    ) -> bool: ...


@dataclass
class Tracked:
    body: Mapping[str, Any]
    state: ResourceState
    in_use_told: bool = False
    """A dependency being deleted while in use: its Warning Event is posted (once)."""


IN_USE_POLL_SECONDS: Final = 5.0
"""How often a dependency being deleted looks again whether it is still in use."""


def lean(body: Mapping[str, Any]) -> dict[str, Any]:
    """The part of a watched object a pass reads; the rest (managedFields above all) is
    not kept in memory. The status stays: a pass patches the status it observes."""
    meta = body.get("metadata") or {}
    return {
        "apiVersion": body.get("apiVersion"),
        "kind": body.get("kind"),
        "metadata": {k: meta[k] for k in _METADATA if k in meta},
        "spec": body.get("spec") or {},
        "status": body.get("status") or {},
    }


class Workers:
    """Every resource of every kind the operator runs, and the workers that run their passes."""

    def __init__(
        self,
        runners: Mapping[str, PassRunner[Any, Any]],
        kube: FinalizerSink,
        events: EventSink,
        *,
        size: int = 16,
        dependencies: Mapping[str, Dependency] | None = None,
        lister: ObjectLister | None = None,
        on_ready_elsewhere: Callable[[str, str], None] | None = None,
    ) -> None:
        self.runners = runners
        self.kube = kube
        self.events = events
        self.size = size
        self.dependencies: Mapping[str, Dependency] = dependencies or {}
        """Kinds the others depend on (connections, Listeners), each with its test of
        use. One turning Ready wakes the resources of other kinds of its namespace that
        are stalled or retrying, which may have failed for want of it, instead of
        leaving them to their resync; one being deleted keeps our finalizer while a
        resource still uses it (`deployplane.reconcile.usage`)."""
        self.lister = lister
        """A label-sharded instance's: its watch holds only its shard's resources, so
        the users of a dependency being deleted are listed from the apiserver."""
        self.elsewhere = ReadyWatch()
        """The dependencies another instance reconciles, as last seen (`release`)."""
        self.on_ready_elsewhere = on_ready_elsewhere
        """(namespace, name) of a dependency another instance found Ready: what this
        one cached of it (a connection's API key) is read again before the wake-up."""
        self.queue: WorkQueue[Key] = WorkQueue(jitter=REQUEUE_JITTER)
        self.resources: dict[Key, Tracked] = {}
        self._uids: dict[tuple[str, str, str], str] = {}
        """(kind, namespace, name) -> the uid of the object that has the name now."""
        self._tasks: list[asyncio.Task[None]] = []

    def start(self) -> None:
        """Start the workers (once; later calls do nothing)."""
        if not self._tasks:
            self._tasks = [asyncio.create_task(self._work()) for _ in range(self.size)]

    async def stop(self, grace: float = 30.0) -> None:
        """Hand out no more work; wait at most `grace` seconds for the passes under
        way, then cancel what is left. A cancelled pass leaves what a crash would: every
        write is one request, and a create is preceded by its create marker, so
        the next operator adopts what this one created instead of creating it twice."""
        self.queue.stop()
        if self._tasks:
            _, pending = await asyncio.wait(self._tasks, timeout=grace)
            if pending:
                log.warning("%d passes still running after %.0fs; cancelling", len(pending), grace)
                for task in pending:
                    task.cancel()
            await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks = []

    def ended_workers(self) -> int:
        """Workers that ended while the pool runs: none should (a pass that raises is
        caught), so one that did means the queue drains slower or not at all."""
        return sum(task.done() for task in self._tasks)

    def observe(self, kind: str, event_type: str | None, body: Mapping[str, Any]) -> None:
        """A watch event (`event_type` None: the object was listed)."""
        meta = body.get("metadata") or {}
        name = (kind, meta["namespace"], meta["name"])
        key = (*name, meta.get("uid") or "")
        if kind in self.dependencies:
            self.elsewhere.forget(key)  # ours now, if it was another instance's
        if event_type == "DELETED":
            if self._uids.get(name) == key[3]:
                self._gone(key)
            return
        tracked = self.resources.get(key)
        if tracked is None:
            old_uid = self._uids.get(name)
            if old_uid is not None and old_uid != key[3]:
                # The name now belongs to another object: the one we knew was deleted
                # while the watch was away (its DELETED never came).
                self._gone((*name, old_uid))
            self._uids[name] = key[3]
            self.resources[key] = Tracked(lean(body), ResourceState())
            self.queue.add(key)
            return
        kept = lean(body)
        tracked.body = kept
        if is_deleting(kept):
            if has_finalizer(kept):
                self.queue.add(key)
        elif tracked.state.changed(kept) or self._edited(tracked.state, kept):
            self.queue.add(key)

    def release(self, kind: str, body: Mapping[str, Any], event_type: str | None = None) -> None:
        """A watch event of a resource another instance reconciles (its shard label
        says so). If it was ours (its label moved away), forget it, as if it were
        deleted: no pass and no finalization, and our finalizer stays on it for the
        instance that takes it over (which adopts the remote object by the id the status
        records, or by the create marker). A pass under way ends unrequeued.
        A dependency seen turning Ready wakes our resources of its namespace that wait
        (`deployplane.reconcile.usage`); its own instance wakes its own."""
        meta = body.get("metadata") or {}
        key = (kind, meta["namespace"], meta["name"], meta.get("uid") or "")
        if key in self.resources:
            self._gone(key)
        if kind not in self.dependencies:
            return
        if event_type == "DELETED":
            self.elsewhere.forget(key)
        elif self.elsewhere.turned_ready(key, body):
            if self.on_ready_elsewhere is not None:
                self.on_ready_elsewhere(key[1], key[2])
            self._wake_unsettled(key[0], key[1])

    @staticmethod
    def _edited(state: ResourceState, body: Mapping[str, Any]) -> bool:
        """A status someone else wrote (wiped or edited by hand): the pass repairs it
        now, not at the next resync. Our own writes' echoes are not (`ResourceState`)."""
        return not is_paused(body) and state.foreign(body["status"])

    def _wake_unsettled(self, kind: str, namespace: str) -> None:
        """Queue now every resource of `namespace` (not of the dependency's `kind`)
        whose last pass stalled or is being retried."""
        for key, tracked in self.resources.items():
            if key[1] != namespace or key[0] == kind:
                continue
            if tracked.state.history.last_state in (State.STALLED, State.RETRYING):
                self.queue.add(key)

    async def users_of(self, key: Key) -> list[str]:
        """The resources (kind/name) that use dependency `key`: every shard's, listed,
        if this instance has a lister; else those it watches."""
        dependency = self.dependencies.get(key[0])
        tracked = self.resources.get(key)
        if self.lister is None or dependency is None or tracked is None:
            return self.users(key)
        plurals = {kind: runner.plural for kind, runner in self.runners.items() if kind != key[0]}
        where = dependency.users_namespace(tracked.body)
        return await listed_users(self.lister, plurals, tracked.body, dependency.used_by, where)

    def users(self, key: Key) -> list[str]:
        """The resources (kind/name), among those this instance watches, that use
        dependency `key` (of its namespace, or of another that it admits)."""
        dependency = self.dependencies.get(key[0])
        tracked = self.resources.get(key)
        if dependency is None or tracked is None:
            return []
        return [
            user_name(other[0], user.body, key[1])
            for other, user in self.resources.items()
            if other[0] != key[0] and dependency.used_by(tracked.body, user.body)
        ]

    def _gone(self, key: Key) -> None:
        self.resources.pop(key, None)
        self._uids.pop(key[:3], None)
        self.queue.drop(key)
        on_gone = self.runners[key[0]].on_gone
        if on_gone is not None:
            # It must leave the per-resource gauges with it, or a deleted resource
            # counts as not Ready forever.
            on_gone(f"{key[1]}/{key[2]}")

    async def _work(self) -> None:
        while (key := await self.queue.get()) is not None:
            result = Result()
            try:
                result = await self.run_pass(key)
            except Exception:
                result = self._failed(key)
            finally:
                self.finish(key, result)

    def finish(self, key: Key, result: Result) -> None:
        """Hand `key` back to the queue as the pass's Result says (a resource gone
        meanwhile is not requeued): the workers read the decision, never make it."""
        requeue_after = result.requeue_after if key in self.resources else None
        self.queue.done(key, requeue_after, rate_limited=result.rate_limited)

    def _failed(self, key: Key) -> Result:
        """A pass that raised (called in its `except`): the schedule's error Result."""
        tracked = self.resources.get(key)
        if tracked is None:
            log.exception("%s/%s: pass failed; gone meanwhile", key[1], key[2])
            return Result()
        result = self.runners[key[0]].reconciler.schedule.failed(tracked.state.history)
        log.exception(
            "%s/%s: pass failed; again in %.0fs", key[1], key[2], result.requeue_after or 0.0
        )
        return result

    async def run_pass(self, key: Key) -> Result:
        """One pass over the resource, or its finalization; its Result."""
        tracked = self.resources.get(key)
        if tracked is None:
            return Result()
        body, state, runner = tracked.body, tracked.state, self.runners[key[0]]
        if not is_deleting(body):
            before = state.history.last_state
            # Queued, not awaited: an Event never holds up the pass, nor fails it.
            result = await runner.one_pass(
                body, state, post_event=lambda event: self.events.record(body, event)
            )
            turned_ready = before is not State.READY and state.history.last_state is State.READY
            if turned_ready and key[0] in self.dependencies:
                self._wake_unsettled(key[0], key[1])
            return result
        if not has_finalizer(body):
            return Result()  # not ours to hold: the object goes
        users = await self.users_of(key)
        if users:
            message = in_use_message(users)
            for event in await runner.hold(body, state, Reason.IN_USE, message):
                self.events.record(body, event)
            if not tracked.in_use_told:
                tracked.in_use_told = True
                log.info("%s/%s: %s", key[1], key[2], message)
                self.events.record(
                    body, EventRecord("Warning", EventReason.IN_USE, message, "Delete")
                )
            return Result(IN_USE_POLL_SECONDS)
        not_yet = await runner.finalize(body, state)
        if not_yet is not None:
            log.warning(
                "%s/%s: %s; again in %.0fs", key[1], key[2], not_yet.message, not_yet.retry_after
            )
            for event in await runner.hold_for(body, state, not_yet):
                self.events.record(body, event)
            return not_yet.result
        await self.kube.remove_finalizer(runner.plural, key[1], key[2], FINALIZER)
        return Result()
