"""A deletion that must wait says why, and deleting in any order never deadlocks:
the status a held or blocked deletion publishes (`reconcile.deletion`, a table of case ->
want), the workers finalizing through it (Events once, nothing written when nothing
waits, what a finalized resource held let go of before our finalizer comes off), and
a Listener held while AgentDeployments run on it, of its namespace or of another it
admits. No Kubernetes: the fake kind over FakeKube."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from typing import Any, cast

import pytest
from tests.support.fakeexternal import ConnecterFns, ExternalFns, FakeSpec, FakeStatus, returns
from tests.support.fakekube import FakeKube

from deployplane.kinds.listener.kind import shared, uses
from deployplane.reconcile import deletion
from deployplane.reconcile.conditions import Reason, set_condition
from deployplane.reconcile.external import DependencyNotReady, Managed
from deployplane.reconcile.finalizer import DELETE_POLL_SECONDS, DELETE_RETRY_SECONDS, FINALIZER
from deployplane.reconcile.outcome import EventRecord
from deployplane.reconcile.passes import PassRunner
from deployplane.reconcile.reconciler import Reconciler
from deployplane.reconcile.schedule import Result, Schedule
from deployplane.reconcile.usage import Dependency
from deployplane.reconcile.workers import IN_USE_POLL_SECONDS, Workers

NS = "team-a"
OLD = "2020-01-01T00:00:00Z"
DEP_ID = "dep-1"
MISSING = "API key Secret key of ControlPlaneConnection default not found"
BLOCKED = f"cannot delete on the control plane yet: {MISSING}"
IN_USE = "still used by agentdeployment/bot (1); deleted once none is"
DELETING = "waiting for the control plane to finish deleting"


def conditions(**by_type: str) -> list[dict[str, Any]]:
    """Conditions as a pass wrote them ("status/reason" or "status/reason/message")."""
    out = []
    for type_, value in by_type.items():
        status, reason, *message = value.split("/", 2)
        out.append(
            {
                "type": type_,
                "status": status,
                "reason": reason,
                "message": message[0] if message else "",
                "lastTransitionTime": OLD,
                "observedGeneration": 1,
            }
        )
    return out


READY = conditions(Ready="True/Deployed", Synced="True/ReconcileSuccess")


# ------------------------------------------------------- the status, case -> want


@dataclass(frozen=True)
class Want:
    conditions: dict[str, str]
    """Condition type -> "status/reason"."""
    moved: list[str]
    """Condition types whose lastTransitionTime moved."""
    events: list[tuple[str, str]] = field(default_factory=list)
    """(reason, message) of the Events."""


@dataclass(frozen=True)
class Case:
    before: list[dict[str, Any]]
    reason: Reason
    message: str
    want: Want
    cause: str | None = None


CASES: dict[str, Case] = {
    "in use, from Ready: Ready False InUse, Reconciling, Synced kept": Case(
        before=READY,
        reason=Reason.IN_USE,
        message=IN_USE,
        want=Want(
            {
                "Ready": "False/InUse",
                "Synced": "True/ReconcileSuccess",
                "Reconciling": "True/InUse",
            },
            moved=["Ready", "Reconciling"],
        ),
    ),
    "blocked, from Ready: Synced names the missing thing's reason; one Warning": Case(
        before=READY,
        reason=Reason.DELETION_BLOCKED,
        message=BLOCKED,
        cause="DependencyNotReady",
        want=Want(
            {
                "Ready": "False/DeletionBlocked",
                "Synced": "False/DependencyNotReady",
                "Reconciling": "True/DeletionBlocked",
            },
            moved=["Ready", "Reconciling", "Synced"],
            events=[("DeletionBlocked", BLOCKED)],
        ),
    ),
    "blocked again, the same words: no Event, nothing moves": Case(
        before=conditions(
            Ready=f"False/DeletionBlocked/{BLOCKED}",
            Synced=f"False/DependencyNotReady/{BLOCKED}",
            Reconciling=f"True/DeletionBlocked/{BLOCKED}",
        ),
        reason=Reason.DELETION_BLOCKED,
        message=BLOCKED,
        cause="DependencyNotReady",
        want=Want(
            {
                "Ready": "False/DeletionBlocked",
                "Synced": "False/DependencyNotReady",
                "Reconciling": "True/DeletionBlocked",
            },
            moved=[],
        ),
    ),
    "blocked, Stalled before: Stalled goes (the delete is retried)": Case(
        before=conditions(
            Ready="False/InvalidSpec", Synced="False/InvalidSpec", Stalled="True/InvalidSpec"
        ),
        reason=Reason.DELETION_BLOCKED,
        message=BLOCKED,
        cause="ControlPlaneUnavailable",
        want=Want(
            {
                "Ready": "False/DeletionBlocked",
                "Synced": "False/ControlPlaneUnavailable",
                "Reconciling": "True/DeletionBlocked",
            },
            moved=["Reconciling"],
            events=[("DeletionBlocked", BLOCKED)],
        ),
    ),
    "unblocked, the control plane deleting: Deleting, Synced True again, no Event": Case(
        before=conditions(
            Ready=f"False/DeletionBlocked/{BLOCKED}",
            Synced=f"False/DependencyNotReady/{BLOCKED}",
            Reconciling=f"True/DeletionBlocked/{BLOCKED}",
        ),
        reason=Reason.DELETING,
        message=DELETING,
        want=Want(
            {
                "Ready": "False/Deleting",
                "Synced": "True/ReconcileSuccess",
                "Reconciling": "True/Deleting",
            },
            moved=["Synced"],
        ),
    ),
}


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_a_waiting_deletion_says_why(case: Case) -> None:
    before = FakeStatus.model_validate({"deploymentId": DEP_ID, "conditions": case.before})
    status, events = deletion.waiting(before, 1, case.reason, case.message, case.cause)
    got = {c.type: c for c in status.conditions}
    assert {
        "conditions": {t: f"{c.status}/{c.reason}" for t, c in got.items()},
        "moved": sorted(t for t, c in got.items() if c.last_transition_time != OLD),
        "events": [(e.reason, e.message) for e in events],
    } == {
        "conditions": case.want.conditions,
        "moved": sorted(case.want.moved),
        "events": case.want.events,
    }
    assert all(e.type == "Warning" and e.action == "Delete" for e in events)
    assert got["Ready"].message == case.message
    assert status.deployment_id == DEP_ID, "the id stays: the delete still needs it"
    assert deletion.held(status) is (case.reason is not Reason.DELETING)


def test_a_ready_status_is_not_held() -> None:
    assert not deletion.held(FakeStatus.model_validate({"conditions": READY}))
    condition = set_condition([], "Ready", "False", Reason.DELETING, "", 1)  # type: ignore[arg-type]
    assert not deletion.held(FakeStatus(conditions=[condition]))


# ------------------------------------------------------------ through the workers


class Events(list[EventRecord]):
    def record(self, _body: Any, event: EventRecord) -> None:
        self.append(event)


@dataclass
class Released:
    """A connecter's release (`reconcile.external.Releaser`), recorded."""

    names: list[str] = field(default_factory=list)

    async def release(self, mr: Managed[Any, Any]) -> None:
        self.names.append(mr.name)


def deleting(name: str = "bot", namespace: str = NS, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "deployplane.io/v1alpha1",
        "kind": "Fake",
        "metadata": {
            "namespace": namespace,
            "name": name,
            "uid": f"uid-{name}",
            "generation": 1,
            "resourceVersion": "1",
            "finalizers": [FINALIZER],
            "deletionTimestamp": "now",
        },
        "spec": spec,
        "status": {"deploymentId": DEP_ID, "conditions": READY},
    }


def one_kind(
    ext: ExternalFns, connect: list[BaseException | None], released: Released | None = None
) -> tuple[Workers, FakeKube, Events]:
    """The fake kind, whose connecting fails with each of `connect` in turn (None:
    connects), then connects."""
    kube = FakeKube()

    class Connecting(ConnecterFns):
        async def connect(self, mr: Any) -> Any:
            self.connect_error = connect.pop(0) if connect else None
            return await super().connect(mr)

    connecter = Connecting(ext)
    reconciler = Reconciler(connecter, kind="deployment", schedule=Schedule())
    runner = PassRunner(
        cast(Reconciler[Any, Any], reconciler),
        FakeSpec,
        "fakes",
        kube,
        status_model=FakeStatus,
        releaser=released,
    )
    events = Events()
    return Workers({"Fake": runner}, kube, events), kube, events


def ready_of(kube: FakeKube, name: str = "bot", plural: str = "fakes") -> tuple[str, str, str]:
    status = kube.statuses[(NS, plural, name)]
    ready = next(c for c in status["conditions"] if c["type"] == "Ready")
    return ready["status"], ready["reason"], ready["message"]


async def test_a_blocked_deletion_says_so_then_goes_once_what_it_needs_is_back() -> None:
    """The API key gone (a Secret deleted before any protection): the resource says
    Ready False DeletionBlocked, naming it, and one Warning Event, instead of Ready True
    and a line in the operator's log; once it is back the delete goes through."""
    missing = DependencyNotReady("API key Secret key of ControlPlaneConnection default not found")
    ext = ExternalFns(delete_fn=returns(False, True))
    released = Released()
    workers, kube, events = one_kind(ext, [missing, missing], released)
    key = ("Fake", NS, "bot", "uid-bot")
    workers.observe("Fake", None, deleting())
    assert await workers.run_pass(key) == Result(DELETE_RETRY_SECONDS, rate_limited=True)
    assert ready_of(kube) == ("False", "DeletionBlocked", BLOCKED)
    synced = next(
        c for c in kube.statuses[(NS, "fakes", "bot")]["conditions"] if c["type"] == "Synced"
    )
    assert (synced["status"], synced["reason"]) == ("False", "DependencyNotReady")
    assert await workers.run_pass(key) == Result(DELETE_RETRY_SECONDS, rate_limited=True)
    assert [(e.type, e.reason, e.message) for e in events] == [
        ("Warning", "DeletionBlocked", BLOCKED)
    ], "told once"
    assert len(kube.writes) == 1, "the same words again write nothing"
    # Back: the delete is sent; the control plane is at work, then done.
    assert await workers.run_pass(key) == Result(DELETE_POLL_SECONDS)
    assert ready_of(kube) == ("False", "Deleting", DELETING)
    assert released.names == []
    assert kube.finalizers_removed == []
    assert await workers.run_pass(key) == Result()
    assert released.names == ["bot"], "what it held is let go of first"
    assert kube.finalizers_removed == [("fakes", NS, "bot", FINALIZER)]


async def test_a_deletion_that_never_waits_on_anything_else_writes_nothing() -> None:
    workers, kube, events = one_kind(ExternalFns(delete_fn=returns(False, True)), [])
    key = ("Fake", NS, "bot", "uid-bot")
    workers.observe("Fake", None, deleting())
    assert await workers.run_pass(key) == Result(DELETE_POLL_SECONDS)
    assert await workers.run_pass(key) == Result()
    assert (kube.writes, list(events)) == ([], [])


async def test_a_resource_that_never_made_anything_goes_without_its_connection() -> None:
    """No id, no create marker: nothing to delete, so a connection that is missing
    (never there, or deleted first) holds nothing up."""
    missing = DependencyNotReady("no control-plane connection")
    workers, kube, _ = one_kind(ExternalFns(), [missing])
    body = deleting()
    body["status"] = {}
    workers.observe("Fake", None, body)
    assert await workers.run_pass(("Fake", NS, "bot", "uid-bot")) == Result()
    assert kube.finalizers_removed == [("fakes", NS, "bot", FINALIZER)]


# ------------------------------------------------------------------ a Listener in use


def body_of(kind: str, name: str, namespace: str = NS, **spec: Any) -> dict[str, Any]:
    obj = deleting(name, namespace, **spec)
    obj["kind"] = kind
    obj["metadata"].pop("deletionTimestamp")
    obj["status"] = {}
    return obj


def listener(namespace: str = NS, **spec: Any) -> dict[str, Any]:
    obj = body_of("Listener", "cluster", namespace, **spec)
    obj["metadata"]["deletionTimestamp"] = "now"
    obj["status"] = {"listenerId": "lst-1"}
    return obj


def on(user: str, where: str = NS, **listener_ref: Any) -> dict[str, Any]:
    """An AgentDeployment `user` of namespace `where` whose listenerRef is `listener_ref`."""
    return body_of("AgentDeployment", user, where, sourceConfig={"listenerRef": listener_ref})


@pytest.mark.parametrize(
    ("user", "uses_it"),
    [
        (on("a", name="cluster"), True),
        (on("b", name="cluster", namespace=NS), True),
        (on("c", "team-b", name="cluster", namespace=NS), True),
        (on("d", "team-b", name="cluster"), False),  # its own namespace's "cluster"
        (on("e", name="other"), False),
        (body_of("AgentDeployment", "f", sourceConfig={"listenerId": "lst-1"}), True),
        (body_of("AgentDeployment", "g", "team-b", sourceConfig={"listenerId": "lst-1"}), False),
        (body_of("AgentDeployment", "h", sourceConfig={"listenerId": "lst-2"}), False),
        (body_of("AgentDeployment", "i"), False),
        (body_of("ControlPlaneConnection", "default"), False),
    ],
    ids=lambda v: v if isinstance(v, bool) else v["metadata"]["name"],
)
def test_which_resources_run_on_a_listener(user: dict[str, Any], uses_it: bool) -> None:
    assert uses(listener(), user) is uses_it


def test_a_listener_is_looked_for_in_other_namespaces_only_when_it_admits_them() -> None:
    assert not shared(listener())
    assert not shared(listener(allowedNamespaces={"from": "Same"}))
    assert shared(listener(allowedNamespaces={"from": "All"}))
    assert shared(listener(allowedNamespaces={"from": "Selector", "selector": {}}))
    dependency = Dependency(uses, shared)
    assert dependency.users_namespace(listener()) == NS
    assert dependency.users_namespace(listener(allowedNamespaces={"from": "All"})) is None


class Lister:
    def __init__(self, objects: list[dict[str, Any]]) -> None:
        self.objects = objects
        self.listed: list[tuple[str, str | None]] = []

    async def list_objects(
        self, plural: str, namespace: str | None
    ) -> AsyncIterator[Mapping[str, Any]]:
        self.listed.append((plural, namespace))
        for obj in self.objects:
            if namespace is None or obj["metadata"]["namespace"] == namespace:
                yield obj


async def test_a_listener_is_held_while_deployments_of_any_namespace_run_on_it() -> None:
    """Deleted with everything (a namespace, a pruned Kustomization), the Listener waits
    until the AgentDeployments on it are gone: the control plane removes a deployment
    only once the listener's data plane has removed its workloads. One of another
    namespace counts too, named with its namespace; a sharded instance lists them
    everywhere when the Listener admits other namespaces."""
    kube = FakeKube()

    def runner(plural: str) -> PassRunner[Any, Any]:
        reconciler = Reconciler(ConnecterFns(ExternalFns()), kind=plural, schedule=Schedule())
        return PassRunner(
            cast(Reconciler[Any, Any], reconciler), FakeSpec, plural, kube, status_model=FakeStatus
        )

    runners = {"Listener": runner("listeners"), "AgentDeployment": runner("agentdeployments")}
    workers = Workers(runners, kube, Events(), dependencies={"Listener": Dependency(uses, shared)})
    shared_listener = listener(allowedNamespaces={"from": "All"})
    workers.observe("Listener", None, shared_listener)
    workers.observe("AgentDeployment", None, on("far", "team-b", name="cluster", namespace=NS))
    key = ("Listener", NS, "cluster", "uid-cluster")
    assert await workers.run_pass(key) == Result(IN_USE_POLL_SECONDS)
    assert ready_of(kube, "cluster", "listeners") == (
        "False",
        "InUse",
        "still used by agentdeployment/team-b/far (1); deleted once none is",
    )
    workers.lister = lister = Lister([on("near", name="cluster")])
    assert await workers.run_pass(key) == Result(IN_USE_POLL_SECONDS)
    assert lister.listed == [("agentdeployments", None)], "every namespace: it admits them"
    lister.objects.clear()
    assert await workers.run_pass(key) == Result()
    assert kube.finalizers_removed == [("listeners", NS, "cluster", FINALIZER)]
