"""Label shards on a real kube-apiserver (issue 36, item 3): shard `a` (one replica),
shard `b` (a Kopf-peered pair) and the default instance (`--shard-default`), each a
`deployplane operator run` subprocess against the emulator on loopback.

Proven: every resource is reconciled by exactly one instance (the reportingInstance of
every Event about it is its shard's; each instance has its own POD_NAME), a connection
too (reconciled by its shard, used by another's resource through the index), kill -9 of
shard b's active replica in the middle of its burst loses and duplicates nothing, and
moving a resource from shard a to shard b by its label hands it over: the new shard
reconciles its next change, the old one writes nothing more about it, and the control
plane still holds exactly one deployment for it (not deleted, not created twice).

Across shards (shard b and the default): a connection the default instance reconciles,
turning Ready, wakes shard b's resources that its refused key had stalled (no edit, no
10-minute resync); deleted while only shard b's resources use it, it keeps our
finalizer, the default instance's InUse Event naming them, until they are gone.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client
from tests.support.operator_fixtures import docker
from tests.support.operator_harness import (
    API_KEY,
    WORKSPACE,
    condition,
    is_true,
    ready_for_generation,
)
from tests.support.reliability_scenarios import (
    AGD,
    PEERING_GROUP,
    PEERING_PLURAL,
    PEERING_VERSION,
    Report,
    Stage,
    check_converged,
    crd_documents,
    is_ready,
    peering_crd,
    peers,
    running,
    wait_all,
)

from deployplane.devcluster.manifests import Applier
from deployplane.kube.paths import SHARD_LABEL
from deployplane.reconcile.finalizer import FINALIZER

CPC = "controlplaneconnections"
PEERING = "deployplane-shard-b"
LIFETIME = 5
"""Shard b's peering lifetime: how long its standby waits after a kill -9."""


@pytest.fixture(scope="module")
def crds(k8s_api: client.ApiClient) -> None:
    Applier(k8s_api).apply([*crd_documents(), peering_crd()])


@pytest.fixture
def stage(
    k8s_api: client.ApiClient, kubeconfig: Path, namespace: str, crds: None, tmp_path: Path
) -> Stage:
    return Stage(k8s_api, kubeconfig, namespace, tmp_path)


def labelled(name: str, shard: str | None, image: str = "registry.example.com/agent:1") -> Any:
    body = docker(name, image)
    if shard is not None:
        body["metadata"]["labels"] = {SHARD_LABEL: shard}
    return body


def event_counts(stage: Stage) -> dict[tuple[str, str], int]:
    """How many Events each instance (reportingInstance) posted about each object."""
    events = client.CoreV1Api(stage.api).list_namespaced_event(stage.namespace).items
    counts: dict[tuple[str, str], int] = {}
    for event in events:
        instance = event.reporting_instance or (event.source.host if event.source else None)
        key = (event.involved_object.name, instance or "?")
        counts[key] = counts.get(key, 0) + (event.count or 1)
    return counts


def reporters(stage: Stage) -> dict[str, set[str]]:
    """The reportingInstance of every Event, by the name of the object it is about."""
    seen: dict[str, set[str]] = {}
    for name, instance in event_counts(stage):
        seen.setdefault(name, set()).add(instance)
    return seen


def wait_for(what: str, check: Any, within: float = 60) -> None:
    deadline = time.monotonic() + within
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.5)


def running_instances(stage: Stage, specs: dict[str, tuple[str, ...]]) -> Iterator[dict[str, Any]]:
    """The emulator and one operator process per POD_NAME in `specs` (its arguments),
    running until the generator is closed."""
    emulator = stage.emulator(step_seconds=0.5).start()
    operators = {
        pod: stage.operator(emulator, f"{pod}.log", *args, POD_ID=pod, POD_NAME=pod).start()
        for pod, args in specs.items()
    }
    with running(emulator, *operators.values()):
        yield {"emulator": emulator, **operators}


@pytest.fixture
def shards(stage: Stage) -> Iterator[dict[str, Any]]:
    """The emulator and the four operator processes (by POD_NAME), running."""
    client.CustomObjectsApi(stage.api).create_namespaced_custom_object(
        PEERING_GROUP,
        PEERING_VERSION,
        stage.namespace,
        PEERING_PLURAL,
        {"apiVersion": f"{PEERING_GROUP}/{PEERING_VERSION}", "kind": "KopfPeering"}
        | {"metadata": {"name": PEERING}},
    )
    peered = ("--peering", PEERING, "--peering-lifetime", str(LIFETIME))
    yield from running_instances(
        stage,
        {
            "shard-a": ("--shard", "a"),
            "shard-b-1": ("--shard", "b", *peered),
            "shard-b-2": ("--shard", "b", *peered),
            "default": ("--shard-default",),
        },
    )


@pytest.mark.timeout(240)
def test_two_shards_and_the_default_each_reconcile_their_own_and_hand_over(
    stage: Stage, shards: dict[str, Any]
) -> None:
    resources = stage.resources
    wait_for("shard b's two peers", lambda: len(peers(stage, PEERING)) == 2)
    seen = peers(stage, PEERING)
    active = max(seen, key=lambda pod: int(seen[pod].get("priority", 0)))
    standby = next(pod for pod in seen if pod != active)

    # A connection of shard b, used by a resource of shard a: every instance reads
    # every connection (the index), the one its label names reconciles it.
    resources.put_secret("conn-key", {"apiKey": API_KEY})
    conn: dict[str, Any] = {
        "apiVersion": "deployplane.io/v1alpha1",
        "kind": "ControlPlaneConnection",
        "metadata": {"name": "conn-b", "labels": {SHARD_LABEL: "b"}},
        "spec": {
            "url": shards["emulator"].url,
            "tenantId": WORKSPACE,
            "apiKeySecretRef": {"name": "conn-key", "key": "apiKey"},
        },
    }
    resources.create(CPC, conn)
    groups = {"a": [f"a-{i}" for i in range(6)], "b": [f"b-{i}" for i in range(10)]}
    groups["default"] = [f"d-{i}" for i in range(6)]
    for shard in ("a", "default"):
        for name in groups[shard]:
            body = labelled(name, None if shard == "default" else shard)
            if name == "a-5":
                body["spec"]["connectionRef"] = {"name": "conn-b"}
            resources.create(AGD, body)
    # Shard b's burst: its active replica is killed with half of it created.
    for i, name in enumerate(groups["b"]):
        resources.create(AGD, labelled(name, "b"))
        if i == len(groups["b"]) // 2:
            shards[active].kill9()
    names = [name for group in groups.values() for name in group]
    _, items = wait_all(resources, names, within=120)
    report = Report("shards")
    check_converged(report, shards["emulator"], names, items)
    assert not report.violations, report.violations

    instances = {"a": {"shard-a"}, "b": {active, standby}, "default": {"default"}}
    by_object = reporters(stage)
    for shard, group in groups.items():
        for name in group:
            assert by_object.get(name), f"no Event about {name}"
            assert by_object[name] <= instances[shard], (name, by_object[name])
    assert any(standby in by_object[name] for name in groups["b"]), "the standby took over"
    assert ready_for_generation(resources.get(CPC, "conn-b")), "shard b reconciled it"
    assert by_object.get("conn-b"), "no Event about the connection"
    assert by_object["conn-b"] <= instances["b"], by_object["conn-b"]

    # The handover: a-0 moves to shard b, and changes its image on the way.
    moved = "a-0"
    before = {d["name"]: d["id"] for d in shards["emulator"].all_deployments()}
    old_events = event_counts(stage)[moved, "shard-a"]
    resources.patch(
        AGD,
        moved,
        {
            "metadata": {"labels": {SHARD_LABEL: "b"}},
            "spec": {"sourceRevisionConfig": {"imageUri": "registry.example.com/agent:2"}},
        },
    )
    _, items = wait_all(resources, [moved], within=60)
    obj = items[0]
    assert obj["metadata"]["generation"] == 2
    assert is_ready(obj), obj.get("status")
    assert FINALIZER in obj["metadata"]["finalizers"], "the old shard did not finalize"
    after = {d["name"]: d["id"] for d in shards["emulator"].all_deployments()}
    assert after == before, "one deployment, the same one: none deleted, none created"
    assert (obj.get("status") or {}).get("deploymentId") == before[moved]
    assert reporters(stage)[moved] - {"shard-a"} <= {standby}, "only shard b took it on"
    assert standby in reporters(stage)[moved], "shard b reconciled the change"
    assert event_counts(stage)[moved, "shard-a"] == old_events, "shard a let go of it"
    report = Report("after the handover")
    check_converged(report, shards["emulator"], names, resources.list_all(AGD))
    assert not report.violations, report.violations


@pytest.fixture
def shard_b_and_default(stage: Stage) -> Iterator[dict[str, Any]]:
    """The emulator, shard b and the default instance (one replica each), running."""
    yield from running_instances(
        stage, {"shard-b": ("--shard", "b"), "default": ("--shard-default",)}
    )


def in_use_events(stage: Stage, name: str) -> list[Any]:
    events = client.CoreV1Api(stage.api).list_namespaced_event(stage.namespace).items
    return [e for e in events if e.involved_object.name == name and e.reason == "InUse"]


@pytest.mark.timeout(300)
def test_a_connection_of_the_default_wakes_and_is_held_by_shard_bs_resources(
    stage: Stage, shard_b_and_default: dict[str, Any]
) -> None:
    resources, emulator = stage.resources, shard_b_and_default["emulator"]
    # The default instance reconciles the (unlabelled) connection; only shard b's
    # resources use it. Its key is refused first: the connection and its users stall.
    resources.put_secret("late-key", {"apiKey": "wrong-key-36b"})
    conn: dict[str, Any] = {
        "apiVersion": "deployplane.io/v1alpha1",
        "kind": "ControlPlaneConnection",
        "metadata": {"name": "conn-late"},
        "spec": {
            "url": emulator.url,
            "tenantId": WORKSPACE,
            "apiKeySecretRef": {"name": "late-key", "key": "apiKey"},
        },
    }
    resources.create(CPC, conn)
    users = ["b-late-0", "b-late-1"]
    for name in users:
        body = labelled(name, "b")
        body["spec"]["connectionRef"] = {"name": "conn-late"}
        resources.create(AGD, body)
    for name in users:
        resources.wait(
            AGD,
            name,
            lambda o: condition(o, "Synced").get("reason") == "Unauthorized",
            what="refused, stalled until its resync (10 minutes)",
        )
    # The users read the key themselves (shard b): the default instance's verdict on the
    # connection may land a moment after theirs.
    resources.wait(
        CPC,
        "conn-late",
        lambda o: condition(o, "Ready").get("reason") == "Unauthorized",
        within=60,
        what="the connection refused",
    )

    # The key is fixed: the default instance's recheck turns the connection Ready, and
    # shard b, seeing that through its connections watch, reads the key again and wakes
    # its stalled resources (else: their resync, 10 minutes away).
    resources.put_secret("late-key", {"apiKey": API_KEY})
    resources.wait(CPC, "conn-late", is_true("Ready"), within=90, what="the connection healed")
    _, items = wait_all(resources, users, ready_for_generation, within=90)
    assert all(ready_for_generation(o) for o in items), [o.get("status") for o in items]
    on_the_control_plane = [d["name"] for d in emulator.all_deployments()]
    assert [on_the_control_plane.count(name) for name in users] == [1, 1], on_the_control_plane
    by_object = reporters(stage)
    assert by_object["conn-late"] == {"default"}, by_object["conn-late"]
    assert all(by_object[name] == {"shard-b"} for name in users), by_object

    # Deleted while shard b's resources use it: the default instance, which watches
    # none of them, lists them, keeps our finalizer and says who holds it.
    resources.delete(CPC, "conn-late")
    wait_for("the InUse Event", lambda: in_use_events(stage, "conn-late"), within=60)
    (held,) = in_use_events(stage, "conn-late")
    assert held.message == (
        "still used by agentdeployment/b-late-0, agentdeployment/b-late-1 (2); deleted once none is"
    ), held.message
    assert held.reporting_instance == "default"
    assert "wrong-key-36b" not in held.message
    assert API_KEY not in held.message
    obj = resources.get(CPC, "conn-late")
    assert obj is not None
    assert obj["metadata"].get("deletionTimestamp")
    assert FINALIZER in obj["metadata"]["finalizers"], "held for its users"

    # Its users go (finalized by shard b through it: their deployments deleted), then it.
    resources.delete(AGD, users[0])
    resources.wait(AGD, users[0], lambda o: o is None, what=f"{users[0]} deleted")
    assert resources.get(CPC, "conn-late") is not None, "still held by the other one"
    resources.delete(AGD, users[1])
    for name in users:
        resources.wait(AGD, name, lambda o: o is None, what=f"{name} deleted")
    on_the_control_plane = [d["name"] for d in emulator.all_deployments()]
    assert not set(users) & set(on_the_control_plane), "deleted through the connection"
    resources.wait(CPC, "conn-late", lambda o: o is None, what="deleted once unused")
