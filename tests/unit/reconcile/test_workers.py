"""The workers over the fake kind: which watch events queue a key (new, changed spec or
pause, deletion with our finalizer) and which do not (our own status echoes), one pass
per key at a time, lean bodies, and a failing pass retried after the schedule's delay.
No Kubernetes: the fake connecter and the in-memory FakeKube."""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Mapping
from typing import Any, cast

from tests.support.fakeexternal import (
    ConnecterFns,
    ExternalFns,
    FakeSpec,
    FakeStatus,
    observed,
    raises,
    returns,
)
from tests.support.fakekube import FakeKube
from tests.support.workers_rig import (
    KEY,
    NS,
    RecordedEvents,
    body,
    drain,
    named,
    rig,
    settle,
    two_kinds,
)

from deployplane.reconcile.approval import APPROVED_GENERATION_ANNOTATION
from deployplane.reconcile.errors import ExternalError
from deployplane.reconcile.external import Phase
from deployplane.reconcile.finalizer import FINALIZER
from deployplane.reconcile.passes import PassRunner
from deployplane.reconcile.reconciler import Reconciler
from deployplane.reconcile.schedule import Result, Schedule
from deployplane.reconcile.workers import IN_USE_POLL_SECONDS, Workers, lean


def test_a_new_resource_is_queued_and_its_body_kept_lean() -> None:
    workers, _, _ = rig()
    workers.observe("Fake", "ADDED", body())
    assert workers.queue.due_now() == 1
    kept = workers.resources[KEY].body
    assert "managedFields" not in kept["metadata"]
    assert kept == lean(body())


async def test_our_own_status_echo_queues_nothing_but_a_spec_change_does() -> None:
    workers, kube, _ = rig()
    workers.observe("Fake", "ADDED", body())
    key = await workers.queue.get()
    assert key == KEY
    workers.finish(KEY, await workers.run_pass(KEY))
    workers.observe("Fake", "MODIFIED", echo_of(kube))
    assert workers.queue.due_now() == 0
    # The watch's copy is kept: the next pass patches against the status it observes.
    assert workers.resources[KEY].body["status"]["deploymentId"] == "dep-new"
    assert (workers.resources[KEY].state.status or {})["deploymentId"] == "dep-new"
    workers.observe("Fake", "MODIFIED", body(generation=2))
    assert workers.queue.due_now() == 1


def echo_of(kube: FakeKube, generation: int = 1, **meta: Any) -> dict[str, Any]:
    """The watch event of the object as the fake apiserver holds it (its status)."""
    event = body(generation, **meta)
    event["status"] = copy.deepcopy(kube.statuses.get((NS, "fakes", "w1"), {}))
    return event


async def test_a_status_wiped_by_hand_is_repaired_on_its_event_not_at_the_resync() -> None:
    """`kubectl patch --subresource=status` clearing the conditions: someone else's
    write, repaired on the event that carried it (not at the resync); the repair's own
    echo queues nothing, and a pass that agrees with what is held writes nothing."""
    workers, kube, _ = rig()
    workers.observe("Fake", "ADDED", body())
    await settle(workers)  # created
    await workers.run_pass(KEY)  # Ready
    ready = copy.deepcopy(kube.statuses[(NS, "fakes", "w1")])
    assert [c["type"] for c in ready["conditions"]] == ["Ready", "Synced"]
    workers.observe("Fake", "MODIFIED", echo_of(kube))
    assert workers.queue.due_now() == 0, "our own echo"
    writes = len(kube.writes)

    await kube.patch_status("fakes", NS, "w1", {"conditions": None})  # by hand
    workers.observe("Fake", "MODIFIED", echo_of(kube))
    assert workers.queue.due_now() == 1, "someone else's write asks for a pass"
    await settle(workers)
    assert len(kube.writes) == writes + 2, "the hand edit, then one repair"
    assert kube.writes[-1][3] == {"conditions": ready["conditions"]}
    assert kube.statuses[(NS, "fakes", "w1")] == ready

    workers.observe("Fake", "MODIFIED", echo_of(kube))
    assert workers.queue.due_now() == 0, "the repair's echo asks for nothing"


async def test_a_status_edited_by_hand_is_repaired_before_our_own_write_is_seen() -> None:
    """An edit landing while the watch has not shown our last write yet: it is the
    truth at once (not our write's lag), and the pass patches against it."""
    workers, kube, _ = rig()
    workers.observe("Fake", "ADDED", body())
    await settle(workers)  # created
    await workers.run_pass(KEY)  # Ready; our write: not yet seen on the watch
    ready = copy.deepcopy(kube.statuses[(NS, "fakes", "w1")])
    kube.statuses[(NS, "fakes", "w1")] = {"deploymentId": "dep-new"}  # written over by hand
    workers.observe("Fake", "MODIFIED", echo_of(kube))
    assert workers.queue.due_now() == 1
    await settle(workers)
    assert kube.statuses[(NS, "fakes", "w1")] == ready


class EchoingKube(FakeKube):
    """Hands each status write's watch event to the workers before the write answers
    (`early`: the event may come first), or holds them all back (the watch behind)."""

    def __init__(self, early: bool) -> None:
        super().__init__()
        self.early = early
        self.workers: Workers | None = None
        self.held_back: list[dict[str, Any]] = []
        self.queued_by_echo: list[int] = []
        self.generation = 1

    async def patch_status(
        self, plural: str, namespace: str, name: str, patch: Mapping[str, Any]
    ) -> bool:
        done = await super().patch_status(plural, namespace, name, patch)
        echo = echo_of(self, self.generation)
        if self.early:
            assert self.workers is not None
            self.workers.observe("Fake", "MODIFIED", echo)
            self.queued_by_echo.append(self.workers.queue.due_now())
        else:
            self.held_back.append(echo)
        return done


async def test_our_echoes_ask_for_nothing_however_late_or_early_they_come() -> None:
    """Echoes of our writes, in watch order, after our next writes (the watch behind):
    the status before our first write (the marker patch's event), then each write's.
    None is someone else's, none queues a pass; once the watch shows our last write,
    a status wiped by hand does."""
    kube = EchoingKube(early=False)
    workers = await three_writes(kube)
    for echo in [body(3), *kube.held_back]:
        echo["metadata"]["generation"] = 3  # the statuses are what this is about
        workers.observe("Fake", "MODIFIED", echo)
        assert workers.queue.due_now() == 0, echo["status"]
    assert workers.resources[KEY].state.echoes == []
    workers.observe("Fake", "MODIFIED", body(3))  # wiped, after all of ours
    assert workers.queue.due_now() == 1


async def test_an_echo_that_comes_before_its_writes_answer_asks_for_nothing() -> None:
    kube = EchoingKube(early=True)
    await three_writes(kube)
    assert kube.queued_by_echo == [0, 0, 0]


async def three_writes(kube: EchoingKube) -> Workers:
    """Three passes over a resource whose spec changes each time: three status writes."""
    connecter = ConnecterFns(
        ExternalFns(observe_fn=returns(observed("dep-new", Phase.PROGRESSING)))
    )
    runner = PassRunner(
        cast(Reconciler[Any, Any], Reconciler(connecter, kind="fake", schedule=Schedule())),
        FakeSpec,
        "fakes",
        kube,
        status_model=FakeStatus,
    )
    workers = Workers({"Fake": runner}, kube, RecordedEvents(), size=1)
    kube.workers = workers
    workers.observe("Fake", "ADDED", body())
    workers.queue.drop(KEY)
    for generation in (1, 2, 3):
        kube.generation = generation
        workers.resources[KEY].body = lean(body(generation))
        await workers.run_pass(KEY)
        workers.queue.drop(KEY)
    assert len(kube.writes) == 3
    return workers


async def test_a_status_edit_of_a_paused_or_deleting_resource_asks_for_no_pass() -> None:
    workers, kube, _ = rig()
    workers.observe("Fake", "ADDED", body())
    await settle(workers)
    paused = echo_of(kube, annotations={"deployplane.io/paused": "true"})
    workers.observe("Fake", "MODIFIED", paused)
    await settle(workers)
    wiped = body(annotations={"deployplane.io/paused": "true"})
    workers.observe("Fake", "MODIFIED", wiped)
    assert workers.queue.due_now() == 0
    workers.observe("Fake", "MODIFIED", body(deletionTimestamp="now"))
    assert workers.queue.due_now() == 0


def test_a_deletion_with_our_finalizer_is_queued_and_without_it_is_not() -> None:
    workers, _, _ = rig()
    workers.observe("Fake", "ADDED", body())
    workers.queue.drop(KEY)
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
    assert await workers.run_pass(KEY) == Result()
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
    assert tracked.state.history.attempt == 1, "counted for the retry backoff"
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


def test_a_same_name_object_with_another_uid_is_another_resource() -> None:
    """Deleted and re-created under the same name while the watch was away (its
    DELETED never came, Kopf lists the new one): the new object starts afresh, its state
    (the old external id above all) is not inherited, and the old one is forgotten."""
    workers, _, _ = rig()
    old = body()
    workers.observe("Fake", None, old)
    workers.resources[KEY].state.status = {"deploymentId": "dep-old"}
    new = body(uid="u2")
    workers.observe("Fake", None, new)
    new_key = ("Fake", NS, "w1", "u2")
    assert list(workers.resources) == [new_key]
    assert workers.resources[new_key].state.status is None, "nothing inherited"
    # A late DELETED of the old object leaves the new one alone.
    workers.observe("Fake", "DELETED", old)
    assert list(workers.resources) == [new_key]


async def test_a_new_resource_wakes_one_worker_not_all() -> None:
    workers, _, _ = rig()
    woken: list[int] = []
    tasks = [asyncio.create_task(_take(workers, i, woken)) for i in range(8)]
    for _ in range(5):
        await asyncio.sleep(0)
    assert len(workers.queue._waiters) == 8
    workers.observe("Fake", "ADDED", body())
    still_asleep = [w for w in workers.queue._waiters if not w.done()]
    assert len(still_asleep) == 7, "one waiter woken, the others left asleep"
    for _ in range(5):
        await asyncio.sleep(0)
    assert woken == [0], "the first waiting worker took it"
    workers.queue.stop()
    await asyncio.gather(*tasks)


async def _take(workers: Workers, i: int, woken: list[int]) -> None:
    while (await workers.queue.get()) is not None:
        woken.append(i)


async def test_stop_waits_for_passes_at_most_the_grace_then_cancels() -> None:
    workers, _, _ = rig()
    started, finished = asyncio.Event(), asyncio.Event()

    async def slow_pass(key: Any) -> Result:
        started.set()
        await asyncio.sleep(60)
        finished.set()
        return Result()

    workers.run_pass = slow_pass  # type: ignore[method-assign]
    workers.start()
    workers.observe("Fake", "ADDED", body())
    await asyncio.wait_for(started.wait(), 5)
    loop = asyncio.get_running_loop()
    began = loop.time()
    await workers.stop(grace=0.2)
    assert loop.time() - began < 5
    assert not finished.is_set()


async def test_a_connection_turning_ready_wakes_its_namespaces_unsettled_resources() -> None:
    refused = ExternalError("key refused", reason="Unauthorized", terminal=True)
    fake = ExternalFns(create_fn=raises(refused))
    conn = ExternalFns(create_fn=raises(refused))
    workers = two_kinds(fake, conn)
    workers.observe("Fake", None, named("stalled"))
    workers.observe("Fake", None, named("elsewhere", "team-b"))
    workers.observe("Conn", None, named("default"))
    assert len(await drain(workers)) == 3  # every one stalled (refused)
    assert await drain(workers) == []

    fake.create_fn = conn.create_fn = lambda: observed("id-1")  # the key is fixed: Ready
    workers.observe("Fake", None, named("healthy"))
    assert await drain(workers) == [("Fake", NS, "healthy")]
    # The connection has a pass again (its recheck), turns Ready, and wakes the stalled
    # resource of its namespace: not the one of another namespace, not a settled one.
    workers.queue.add(("Conn", NS, "default", "uid-default"))
    assert await drain(workers) == [("Conn", NS, "default"), ("Fake", NS, "stalled")]
    # Ready again later: nothing turned Ready, nothing woken.
    workers.queue.add(("Conn", NS, "default", "uid-default"))
    assert await drain(workers) == [("Conn", NS, "default")]


async def test_a_connection_in_use_keeps_its_finalizer_until_no_resource_uses_it() -> None:
    workers = two_kinds(ExternalFns(), ExternalFns())
    conn = named("cp")
    conn["metadata"].update(finalizers=[FINALIZER], deletionTimestamp="now")
    workers.observe("Fake", None, named("user", conn="cp"))
    workers.observe("Fake", None, named("other", conn="another"))
    workers.observe("Fake", None, named("elsewhere", "team-b", conn="cp"))
    workers.observe("Conn", None, conn)
    key = ("Conn", NS, "cp", "uid-cp")
    assert workers.users(key) == ["fake/user"]
    assert await workers.run_pass(key) == Result(IN_USE_POLL_SECONDS)
    assert await workers.run_pass(key) == Result(IN_USE_POLL_SECONDS)
    recorded = cast(RecordedEvents, workers.events)
    assert [(e.reason, e.message) for e in recorded] == [
        ("InUse", "still used by fake/user (1); deleted once none is")
    ]  # once
    kube = cast(FakeKube, workers.kube)
    assert kube.finalizers_removed == []
    # Held, it says so where kubectl shows it: Ready False InUse, naming the users.
    status = kube.statuses[(NS, "conns", "cp")]
    ready = next(c for c in status["conditions"] if c["type"] == "Ready")
    assert (ready["status"], ready["reason"]) == ("False", "InUse")
    assert ready["message"] == "still used by fake/user (1); deleted once none is"
    assert len(kube.writes) == 1, "the same words again write nothing"
    workers.observe("Fake", "DELETED", named("user", conn="cp"))
    assert await workers.run_pass(key) == Result()
    assert kube.finalizers_removed == [("conns", NS, "cp", FINALIZER)]


async def test_an_approval_wakes_a_held_resource_at_once_and_its_pass_sends_the_change() -> None:
    """updatePolicy Manual: the first pass holds the create (nothing sent, the change in
    status.pendingChange); the annotation approving generation 1 is a watch event that
    queues a pass now, not at the resync, and that pass creates."""
    ext = ExternalFns()
    workers, kube, recorded = rig(ext)
    manual = {"update_policy": "Manual"}
    workers.observe("Fake", "ADDED", {**body(), "spec": manual})
    await settle(workers)
    assert ext.journal == [("connect",)]
    status = kube.statuses[(NS, "fakes", "w1")]
    assert status["pendingChange"] == {
        "generation": 1,
        "action": "create",
        "reasons": [],
        "fields": [],
    }
    assert [e.reason for e in recorded] == ["AwaitingApproval"]
    workers.observe("Fake", "MODIFIED", {**echo_of(kube), "spec": manual})
    assert workers.queue.due_now() == 0  # our own echo
    approved = echo_of(kube, annotations={APPROVED_GENERATION_ANNOTATION: "1"})
    workers.observe("Fake", "MODIFIED", {**approved, "spec": manual})
    assert workers.queue.due_now() == 1
    await settle(workers)
    assert ("create",) in ext.journal
    assert "pendingChange" not in kube.statuses[(NS, "fakes", "w1")]
