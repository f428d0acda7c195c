"""The workers over the fake kind: which watch events queue a key (new, changed spec or
pause, deletion with our finalizer) and which do not (our own status echoes), one pass
per key at a time, lean bodies, and a failing pass retried after the schedule's delay.
No Kubernetes: the fake connecter and the in-memory FakeKube."""

from __future__ import annotations

import asyncio
import copy
from typing import Any, cast

import pytest
from tests.support.fakeexternal import ConnecterFns, ExternalFns, FakeSpec, FakeStatus
from tests.support.fakekube import FakeKube

from deployplane.reconcile.loop import FINALIZER, ResourceLoop
from deployplane.reconcile.outcome import EventRecord
from deployplane.reconcile.reconciler import Reconciler
from deployplane.reconcile.schedule import Schedule
from deployplane.reconcile.workers import Workers, lean

NS = "team-a"
KEY = ("Fake", NS, "w1")


class RecordedEvents(list[EventRecord]):
    """The Events the workers hand to their recorder."""

    def record(self, _body: Any, event: EventRecord) -> None:
        self.append(event)


def rig(
    ext: ExternalFns | None = None, connect_error: BaseException | None = None
) -> tuple[Workers, FakeKube, RecordedEvents]:
    kube = FakeKube()
    connecter = ConnecterFns(ext or ExternalFns(), connect_error)
    reconciler = Reconciler(connecter, kind="fake", schedule=Schedule())
    loop = ResourceLoop(
        cast(Reconciler[Any, Any], reconciler),
        FakeSpec,
        "fakes",
        kube,
        status_model=FakeStatus,
    )
    recorded = RecordedEvents()
    workers = Workers({"Fake": loop}, kube, recorded, size=2)
    return workers, kube, recorded


def body(generation: int = 1, **meta: Any) -> dict[str, Any]:
    return {
        "apiVersion": "deployplane.io/v1alpha1",
        "kind": "Fake",
        "metadata": {
            "namespace": NS,
            "name": "w1",
            "uid": "u1",
            "generation": generation,
            "resourceVersion": "1",
            "managedFields": [{"manager": "kubectl"}],
            **meta,
        },
        "spec": {},
        "status": {},
    }


def test_a_new_resource_is_queued_and_its_body_kept_lean() -> None:
    workers, _, _ = rig()
    workers.observe("Fake", "ADDED", body())
    assert workers.queue.due_now() == 1
    kept = workers.resources[KEY].body
    assert "managedFields" not in kept["metadata"]
    assert kept == lean(body())


async def test_our_own_status_echo_queues_nothing_but_a_spec_change_does() -> None:
    workers, _, _ = rig()
    workers.observe("Fake", "ADDED", body())
    key = await workers.queue.get()
    assert key == KEY
    delay = await workers.visit(KEY)
    workers.queue.done(KEY, delay)
    echo = body()
    echo["status"] = {"deploymentId": "dep-new"}
    workers.observe("Fake", "MODIFIED", echo)
    assert workers.queue.due_now() == 0
    # Once its state holds the status, the watch's copy is not kept (nor ever read).
    assert "status" not in workers.resources[KEY].body
    assert (workers.resources[KEY].state.status or {})["deploymentId"] == "dep-new"
    workers.observe("Fake", "MODIFIED", body(generation=2))
    assert workers.queue.due_now() == 1


def test_a_deletion_with_our_finalizer_is_queued_and_without_it_is_not() -> None:
    workers, _, _ = rig()
    workers.observe("Fake", "ADDED", body())
    workers.queue.forget(KEY)
    workers.observe("Fake", "MODIFIED", body(deletionTimestamp="now"))
    assert workers.queue.due_now() == 0, "not ours to hold"
    workers.observe("Fake", "MODIFIED", body(deletionTimestamp="now", finalizers=[FINALIZER]))
    assert workers.queue.due_now() == 1


async def test_a_deletion_of_an_object_an_earlier_version_created_releases_its_finalizer() -> None:
    """Kopf's finalizer of earlier versions had our name: deleting such an object takes it
    off (after the control plane let go), and leaves any other finalizer on."""
    ext = ExternalFns()
    workers, kube, _ = rig(ext)
    old = body(deletionTimestamp="now", finalizers=["other.io/keep", FINALIZER])
    old["status"] = {"deploymentId": "dep-1"}
    workers.observe("Fake", "MODIFIED", old)
    assert await workers.visit(KEY) is None
    assert ("delete", "dep-1") in ext.journal
    assert kube.finalizers_removed == [("fakes", NS, "w1", FINALIZER)]


async def test_workers_run_passes_until_stopped_and_a_failing_pass_is_retried_later() -> None:
    ext = ExternalFns()
    workers, kube, posted = rig(ext, connect_error=RuntimeError("boom"))
    workers.start()
    workers.observe("Fake", "ADDED", body())
    for _ in range(100):
        await asyncio.sleep(0)
        if ("connect",) in ext.journal and workers.queue.due_now() == 0:
            break
    tracked = workers.resources[KEY]
    assert ext.journal == [("connect",)]
    assert tracked.state.visit.attempt == 1, "counted for the retry backoff"
    assert len(workers.queue) == 1, "coming back after the schedule's retry delay"
    assert workers.queue.due_now() == 0
    await workers.stop()
    assert kube.writes == []
    assert posted == []


def test_a_deleted_resource_leaves_the_queue_and_the_store() -> None:
    workers, _, _ = rig()
    workers.observe("Fake", "ADDED", body())
    workers.observe("Fake", "DELETED", copy.deepcopy(body()))
    assert KEY not in workers.resources
    assert workers.queue.due_now() == 0


async def kopf_peering_event(status: dict[str, Any], conflicts_found: Any) -> None:
    """Kopf's own peering code (the identity "us", priority 10) handling one look at the
    peers: `status` is the peering object's, `conflicts_found` Kopf's pause toggle."""
    import kopf
    from kopf._core.engines import peering

    settings = kopf.OperatorSettings()
    settings.peering.name = "deployplane"
    settings.peering.priority = 10
    pressed = asyncio.Event()
    pressed.set()  # return at once instead of waiting for the peer to expire
    raw = {"type": "MODIFIED", "object": {"metadata": {"name": "deployplane"}, "status": status}}
    await peering.process_peering_event(
        raw_event=raw,  # type: ignore[arg-type]
        namespace="ns",  # type: ignore[arg-type]
        resource=kopf.Resource("kopf.dev", "v1", "kopfpeerings", namespaced=True),
        identity=peering.Identity("us"),
        settings=settings,
        autoclean=False,
        conflicts_found=conflicts_found,
        stream_pressure=pressed,
    )


@pytest.mark.parametrize("mandatory", [True, False], ids=["peering", "standalone"])
async def test_the_workers_run_only_while_kopfs_peering_lets_this_replica(mandatory: bool) -> None:
    """A peer of a higher priority, then that peer gone. Running (auto-detected peering),
    Kopf logs "Pausing" and "Resuming", which pause and resume the workers. With peering
    on (`--peering NAME`) Kopf starts paused and, finding the higher peer at its first
    look, stays paused without logging "Pausing": the workers must start held and run
    only once Kopf resumes."""
    import datetime as dt
    import logging

    from kopf._cogs.aiokits.aiotoggles import Toggle

    from deployplane.controller.handlers import PEERING_LOGGER, watch_peering

    workers, _, _ = rig()
    hook = watch_peering(workers, paused=mandatory)
    try:
        assert workers.queue.paused is mandatory
        toggle = Toggle(mandatory)  # Kopf pre-activates it when peering is mandatory
        now = dt.datetime.now(dt.UTC).isoformat()
        higher = {"them": {"priority": 20, "lifetime": 60, "lastseen": now}}
        await asyncio.wait_for(kopf_peering_event(higher, toggle), 5)
        assert workers.queue.paused, "held while the higher peer lives"
        await asyncio.wait_for(kopf_peering_event({}, toggle), 5)
        assert not workers.queue.paused
    finally:
        logging.getLogger(PEERING_LOGGER).removeFilter(hook)
