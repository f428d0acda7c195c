"""The reconcile workers over the fake kind, with no Kubernetes (the fake connecter and
the in-memory FakeKube): `rig` builds workers of one kind, `two_kinds` the fake kind and
a "Conn" kind it depends on; `body` and `named` make the watch events' objects; `settle`
and `drain` run the passes that are due. Shared by the tests of the workers, of the
dependency wake-ups (usage) and of the controller's sharding."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

from tests.support.fakeexternal import ConnecterFns, ExternalFns, FakeSpec, FakeStatus
from tests.support.fakekube import FakeKube

from deployplane.reconcile.outcome import EventRecord
from deployplane.reconcile.passes import PassRunner
from deployplane.reconcile.reconciler import Reconciler
from deployplane.reconcile.schedule import Schedule
from deployplane.reconcile.usage import Dependency
from deployplane.reconcile.workers import Workers

NS = "team-a"
KEY = ("Fake", NS, "w1", "u1")


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
    runner = PassRunner(
        cast(Reconciler[Any, Any], reconciler),
        FakeSpec,
        "fakes",
        kube,
        status_model=FakeStatus,
    )
    recorded = RecordedEvents()
    workers = Workers({"Fake": runner}, kube, recorded, size=2)
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


async def settle(workers: Workers) -> None:
    """Run the queued passes (none left due)."""
    while workers.queue.due_now():
        key = await workers.queue.get()
        assert key is not None
        workers.finish(key, await workers.run_pass(key))


def two_kinds(fake: ExternalFns, conn: ExternalFns) -> Workers:
    """The fake kind and a "Conn" kind the others depend on (a waker)."""
    kube = FakeKube()

    def runner(ext: ExternalFns, plural: str) -> PassRunner[Any, Any]:
        reconciler = Reconciler(ConnecterFns(ext), kind=plural, schedule=Schedule())
        return PassRunner(
            cast(Reconciler[Any, Any], reconciler), FakeSpec, plural, kube, status_model=FakeStatus
        )

    runners = {"Fake": runner(fake, "fakes"), "Conn": runner(conn, "conns")}

    def uses(conn: Mapping[str, Any], body: Mapping[str, Any]) -> bool:
        same: bool = body["metadata"]["namespace"] == conn["metadata"]["namespace"]
        return same and bool(body["spec"].get("conn") == conn["metadata"]["name"])

    dependencies = {"Conn": Dependency(uses)}
    return Workers(runners, kube, RecordedEvents(), dependencies=dependencies)


def named(name: str, namespace: str = NS, **spec: Any) -> dict[str, Any]:
    obj = body()
    obj["metadata"].update(name=name, uid=f"uid-{name}", namespace=namespace)
    obj["spec"] = spec
    return obj


async def drain(workers: Workers) -> list[tuple[str, str, str]]:
    """A pass over every key due now, once; the (kind, namespace, name) passed over."""
    passed = []
    while workers.queue.due_now():
        key = await workers.queue.get()
        assert key is not None
        workers.finish(key, await workers.run_pass(key))
        passed.append(key[:3])
    return passed
