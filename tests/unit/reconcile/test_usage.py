"""The kinds the others depend on, across label shards (`deployplane.reconcile.usage`):
a connection being deleted is held while a resource of ANY shard uses it (listed from
the apiserver by a sharded instance), and a connection another instance reconciles,
seen turning Ready through the watch, wakes this instance's waiting resources (and
only on a flip to Ready, never twice for the instance that reconciles it).
No Kubernetes: the fake kind and a "Conn" kind over FakeKube, a lister of dicts."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from typing import Any, cast

from tests.support.fakeexternal import ExternalFns, observed, raises
from tests.support.fakekube import FakeKube
from tests.support.workers_rig import NS, RecordedEvents, drain, named, two_kinds

from deployplane.controller.config import OperatorConfig
from deployplane.controller.runtime import build_runtime
from deployplane.controller.sharding import Sharding
from deployplane.kinds.controlplaneconnection.kind import uses
from deployplane.reconcile.errors import ExternalError
from deployplane.reconcile.finalizer import FINALIZER
from deployplane.reconcile.schedule import Result
from deployplane.reconcile.usage import ReadyWatch, in_use_message, is_ready, listed_users
from deployplane.reconcile.workers import IN_USE_POLL_SECONDS

CONN_KEY = ("Conn", NS, "cp", "uid-cp")


class FakeLister:
    """The apiserver's objects by plural (every shard's), and what was listed."""

    def __init__(self, objects: Mapping[str, list[dict[str, Any]]]) -> None:
        self.objects = {plural: list(items) for plural, items in objects.items()}
        self.listed: list[tuple[str, str | None]] = []

    async def list_objects(
        self, plural: str, namespace: str | None
    ) -> AsyncIterator[Mapping[str, Any]]:
        self.listed.append((plural, namespace))
        for obj in self.objects.get(plural, []):
            if namespace is None or obj["metadata"]["namespace"] == namespace:
                yield obj


def deleting(name: str) -> dict[str, Any]:
    conn = named(name)
    conn["metadata"].update(finalizers=[FINALIZER], deletionTimestamp="now")
    return conn


def ready(name: str, generation: int = 1, observed_generation: int = 1) -> dict[str, Any]:
    conn = named(name)
    conn["metadata"]["generation"] = generation
    conn["status"] = {
        "observedGeneration": observed_generation,
        "conditions": [{"type": "Ready", "status": "True"}],
    }
    return conn


async def test_a_sharded_instance_holds_a_connection_another_shards_resources_use() -> None:
    """The instance reconciling the connection watches none of its users (they are
    another shard's): the apiserver's list says who uses it, and the Event names them."""
    workers = two_kinds(ExternalFns(), ExternalFns())
    other_shard = [named(f"b-{i}", conn="cp") for i in range(4)]
    lister = FakeLister(
        {
            "fakes": [
                *other_shard,
                named("unrelated", conn="x"),
                named("far", "team-b", conn="cp"),
            ],
            "conns": [deleting("cp")],
        }
    )
    workers.lister = lister
    workers.observe("Conn", None, deleting("cp"))
    assert workers.users(CONN_KEY) == [], "its own watch holds none of them"
    assert await workers.run_pass(CONN_KEY) == Result(IN_USE_POLL_SECONDS)
    assert lister.listed == [("fakes", NS)], "the users' kinds, in its namespace, only"
    recorded = cast(RecordedEvents, workers.events)
    assert [(e.reason, e.message) for e in recorded] == [
        ("InUse", "still used by fake/b-0, fake/b-1, fake/b-2 and more (4); deleted once none is")
    ]
    kube = cast(FakeKube, workers.kube)
    lister.objects["fakes"] = lister.objects["fakes"][3:]  # b-0..b-2 deleted
    assert await workers.run_pass(CONN_KEY) == Result(IN_USE_POLL_SECONDS)
    assert kube.finalizers_removed == []
    assert len(recorded) == 1, "told once"
    lister.objects["fakes"] = lister.objects["fakes"][1:]  # b-3 gone: none uses it
    assert await workers.run_pass(CONN_KEY) == Result()
    assert kube.finalizers_removed == [("conns", NS, "cp", FINALIZER)]


async def test_listed_users_reads_every_users_kind_with_the_kinds_own_test() -> None:
    def obj(name: str, **spec: Any) -> dict[str, Any]:
        return {"metadata": {"namespace": NS, "name": name}, "spec": spec}

    lister = FakeLister(
        {
            "agentdeployments": [
                obj("by-ref", connectionRef={"name": "cp"}),
                obj("secret", connectionRef={"name": "cp", "kind": "Secret"}),
            ],
            "listeners": [obj("plain")],
        }
    )
    kinds = {"AgentDeployment": "agentdeployments", "Listener": "listeners"}
    cp, default = obj("cp"), obj("default")
    assert await listed_users(lister, kinds, cp, uses, NS) == ["agentdeployment/by-ref"]
    # A resource that names no connection uses its namespace's `default`.
    assert await listed_users(lister, kinds, default, uses, NS) == ["listener/plain"]


def test_the_in_use_message_names_the_first_three_and_counts() -> None:
    assert in_use_message(["x/b", "x/a"]) == "still used by x/a, x/b (2); deleted once none is"
    four = in_use_message([f"x/{i}" for i in range(4)])
    assert four == "still used by x/0, x/1, x/2 and more (4); deleted once none is"


def test_ready_is_the_ready_condition_for_the_current_generation() -> None:
    assert is_ready(ready("c"))
    assert not is_ready(ready("c", generation=2, observed_generation=1)), "a stale Ready"
    assert not is_ready(named("c")), "no status yet"
    refused = ready("c")
    refused["status"]["conditions"][0]["status"] = "False"
    assert not is_ready(refused)


def test_a_flip_to_ready_is_told_once_and_never_on_first_sight() -> None:
    seen = ReadyWatch()
    assert not seen.turned_ready("k", ready("c")), "first sight, already Ready: nothing waits"
    assert not seen.turned_ready("j", named("c")), "first sight, not Ready"
    assert seen.turned_ready("j", ready("c")), "not Ready -> Ready"
    assert not seen.turned_ready("j", ready("c")), "Ready again: no flip"
    assert not seen.turned_ready("j", ready("c", 2, 1)), "spec changed, not yet checked"
    assert seen.turned_ready("j", ready("c", 2, 2)), "checked again and Ready"
    seen.forget("j")
    seen.forget("k")
    assert len(seen) == 0


async def stalled_rig() -> tuple[Any, ExternalFns]:
    """A resource of NS stalled (its key refused), one of another namespace too."""
    refused = ExternalError("key refused", reason="Unauthorized", terminal=True)
    fake = ExternalFns(create_fn=raises(refused))
    conn = ExternalFns(create_fn=lambda: observed("conn-1"))  # Ready at its first pass
    workers = two_kinds(fake, conn)
    workers.observe("Fake", None, named("stalled", conn="cp"))
    workers.observe("Fake", None, named("elsewhere", "team-b", conn="cp"))
    assert len(await drain(workers)) == 2
    fake.create_fn = lambda: observed("id-1")
    return workers, fake


async def test_a_connection_another_instance_reconciles_wakes_ours_when_it_turns_ready() -> None:
    workers, _ = await stalled_rig()
    refreshed: list[tuple[str, str]] = []
    workers.on_ready_elsewhere = lambda namespace, name: refreshed.append((namespace, name))
    workers.release("Conn", named("cp"), "ADDED")  # another shard's, not Ready yet
    assert await drain(workers) == []
    workers.release("Conn", ready("cp"), "MODIFIED")
    assert refreshed == [(NS, "cp")], "its cached key dropped before the wake-up"
    assert await drain(workers) == [("Fake", NS, "stalled")], "woken: not the other namespace's"
    workers.release("Conn", ready("cp"), "MODIFIED")
    assert await drain(workers) == [], "Ready again: nothing woken"
    assert len(refreshed) == 1
    workers.release("Conn", ready("cp"), "DELETED")
    assert len(workers.elsewhere) == 0
    assert "Conn" not in {key[0] for key in workers.resources}, "never ours to reconcile"


async def test_the_instance_reconciling_the_connection_wakes_through_its_pass_only() -> None:
    """Its own pass wakes the waiting resources; its status echo comes back through
    `observe`, not `release`, and wakes nothing more: each resource is woken once."""
    workers, _ = await stalled_rig()
    workers.release("Conn", named("cp"), "ADDED")  # another's first...
    conn = named("cp")
    workers.observe("Conn", "MODIFIED", conn)  # ... then ours (its label moved here)
    assert len(workers.elsewhere) == 0, "no longer watched as another's"
    passed = await drain(workers)  # its pass turns it Ready and wakes `stalled`
    assert passed == [("Conn", NS, "cp"), ("Fake", NS, "stalled")]
    kube = cast(FakeKube, workers.kube)
    echo = {**conn, "status": dict(kube.statuses[(NS, "conns", "cp")])}
    assert is_ready(echo)
    workers.observe("Conn", "MODIFIED", echo)
    assert await drain(workers) == [], "its echo wakes nothing"


def test_only_a_sharded_runtime_lists_the_users_from_the_apiserver() -> None:
    kube = FakeKube()
    unsharded = build_runtime(OperatorConfig(), kube)  # type: ignore[arg-type]
    assert unsharded.workers.lister is None
    for sharding in (Sharding(shard="a"), Sharding(default=True)):
        runtime = build_runtime(OperatorConfig(), kube, sharding=sharding)  # type: ignore[arg-type]
        assert runtime.workers.lister is kube
