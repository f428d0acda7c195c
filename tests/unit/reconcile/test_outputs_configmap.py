"""spec.writeOutputsTo: the outputs' ConfigMap, written only when they change."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from deployplane.kinds.agentdeployment.status import AgentDeploymentStatus
from deployplane.reconcile.outputs import controlled_by, publish, target

UID = "uid-1"
BODY = {
    "apiVersion": "deployplane.io/v1alpha1",
    "kind": "AgentDeployment",
    "metadata": {"namespace": "team-a", "name": "bot", "uid": UID},
    "spec": {"writeOutputsTo": {"configMapName": "bot-outputs"}},
}
DATA = {"deploymentId": "d1", "url": "https://bot.example", "latestRevisionId": "r1",
        "activeRevisionId": "r1", "revisionStatus": "DEPLOYED"}  # fmt: skip


@dataclass
class Store:
    maps: dict[str, dict[str, Any]] = field(default_factory=dict)
    calls: list[str] = field(default_factory=list)

    async def read_config_map(self, namespace: str, name: str) -> dict[str, Any] | None:
        self.calls.append("get")
        return self.maps.get(name)

    async def create_config_map(self, namespace: str, body: Mapping[str, Any]) -> None:
        self.calls.append("create")
        self.maps[body["metadata"]["name"]] = {**body, "metadata": {**body["metadata"]}}

    async def patch_config_map_data(
        self, namespace: str, name: str, data: Mapping[str, str], resource_version: str | None
    ) -> None:
        self.calls.append("patch")
        self.maps[name]["data"] = dict(data)


def test_the_status_says_what_is_exported() -> None:
    status = AgentDeploymentStatus.model_validate(
        {
            "deploymentId": "d1",
            "url": "https://bot.example",
            "latestRevisionId": "r1",
            "activeRevisionId": "r1",
            "revision": {"id": "r1", "status": "DEPLOYED"},
        }
    )
    assert status.outputs() == DATA
    assert AgentDeploymentStatus().outputs()["url"] == ""


def test_no_target_without_the_field() -> None:
    assert target({"spec": {}}) is None
    assert target(BODY) == "bot-outputs"


async def test_created_owned_then_nothing_until_the_values_change() -> None:
    store = Store()
    done = await publish(store, BODY, "bot-outputs", DATA, seen=None, reread=False)
    assert (done.problem, store.calls) == (None, ["get", "create"])
    made = store.maps["bot-outputs"]
    assert made["data"] == DATA
    assert controlled_by(made, UID)
    (ref,) = made["metadata"]["ownerReferences"]
    assert ref == {"apiVersion": "deployplane.io/v1alpha1", "kind": "AgentDeployment",
                   "name": "bot", "uid": UID, "controller": True,
                   "blockOwnerDeletion": True}  # fmt: skip

    again = await publish(store, BODY, "bot-outputs", DATA, seen=done.seen, reread=False)
    assert store.calls == ["get", "create"], "no request when nothing changed"
    resync = await publish(store, BODY, "bot-outputs", DATA, seen=again.seen, reread=True)
    assert store.calls == ["get", "create", "get"], "a resync reads, and writes nothing"

    changed = {**DATA, "latestRevisionId": "r2", "revisionStatus": "DEPLOYING"}
    await publish(store, BODY, "bot-outputs", changed, seen=resync.seen, reread=False)
    assert store.calls[-2:] == ["get", "patch"]
    assert store.maps["bot-outputs"]["data"] == changed


async def test_a_hand_edit_is_repaired_at_the_resync() -> None:
    store = Store()
    done = await publish(store, BODY, "bot-outputs", DATA, seen=None, reread=False)
    store.maps["bot-outputs"]["data"] = {"url": "edited"}
    await publish(store, BODY, "bot-outputs", DATA, seen=done.seen, reread=True)
    assert store.maps["bot-outputs"]["data"] == DATA


async def test_a_configmap_not_ours_is_never_touched() -> None:
    foreign = {"metadata": {"name": "bot-outputs", "ownerReferences": []}, "data": {"x": "1"}}
    store = Store(maps={"bot-outputs": foreign})
    done = await publish(store, BODY, "bot-outputs", DATA, seen=None, reread=False)
    assert done.problem is not None
    assert "configmap bot-outputs exists and is not owned by agentdeployment bot" in done.problem
    assert store.calls == ["get"]
    assert store.maps["bot-outputs"]["data"] == {"x": "1"}


async def test_a_rename_writes_the_new_name_and_leaves_the_old_one_owned() -> None:
    store = Store()
    done = await publish(store, BODY, "bot-outputs", DATA, seen=None, reread=False)
    moved = await publish(store, BODY, "bot-out-2", DATA, seen=done.seen, reread=False)
    assert store.calls == ["get", "create", "get", "create"]
    assert moved.seen == ("bot-out-2", DATA)
    assert store.maps["bot-outputs"]["data"] == DATA, "the old one is not deleted"
    assert controlled_by(store.maps["bot-outputs"], UID), "still garbage-collected with us"


async def test_a_configmap_controlled_by_another_resource_is_not_ours() -> None:
    """Owned by someone else (or merely owned, not controlled, by us): never touched."""
    theirs = {"uid": "other", "controller": True}
    ours_not_controller = {"uid": UID, "controller": False}
    for ref in (theirs, ours_not_controller):
        cm = {"metadata": {"name": "bot-outputs", "ownerReferences": [ref]}, "data": {}}
        store = Store(maps={"bot-outputs": cm})
        done = await publish(store, BODY, "bot-outputs", DATA, seen=None, reread=False)
        assert done.problem is not None
        assert done.seen is None
        assert store.calls == ["get"]
