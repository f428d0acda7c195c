"""Listeners API of the emulator."""
# ruff: noqa: F811  (pytest fixtures imported from the harness are parameters here)

from __future__ import annotations

import asyncio
import uuid

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import delete
from tests.support.emulator_app import api, emulator, image_body  # noqa: F401  (fixtures)
from tests.support.published import assert_published

from deployplane.emulator.store.tables import listeners

K8S = {"compute_type": "k8s", "compute_id": "cluster-1", "compute_config": {}, "version": "1"}

# Also on PostgreSQL (conftest.py): these are the behaviours a database can change.
pytestmark = pytest.mark.postgres


async def test_create_get_list_listener(api: httpx.AsyncClient) -> None:
    body = {**K8S, "compute_config": {"k8s_namespaces": ["a", "b"]}}
    created = await api.post("/v2/listeners", json=body)
    assert created.status_code == 201
    listener = created.json()
    assert listener["compute_type"] == "k8s"
    assert listener["compute_config"]["k8s_namespaces"] == ["a", "b"]
    got = await api.get(f"/v2/listeners/{listener['id']}")
    assert got.json() == listener
    listed = await api.get("/v2/listeners")
    assert listed.json() == {"resources": [listener], "offset": 1}  # published: always an integer
    by_compute = await api.get("/v2/listeners", params={"compute_id": "cluster-1"})
    assert by_compute.json()["resources"] == [listener]


async def test_duplicate_compute_id_is_409(api: httpx.AsyncClient) -> None:
    assert (await api.post("/v2/listeners", json=K8S)).status_code == 201
    assert (await api.post("/v2/listeners", json=K8S)).status_code == 409


async def test_compute_type_must_be_k8s(api: httpx.AsyncClient) -> None:
    response = await api.post("/v2/listeners", json={**K8S, "compute_type": "ecs"})
    assert response.status_code == 422
    assert response.json()["detail"][0]["loc"] == ["body", "compute_type"]
    missing = await api.post("/v2/listeners", json={"compute_type": "k8s"})
    assert missing.json()["detail"][0]["loc"] == ["body", "compute_id"]


async def test_patch_changes_only_version_and_compute_config(api: httpx.AsyncClient) -> None:
    listener = (await api.post("/v2/listeners", json=K8S)).json()
    path = f"/v2/listeners/{listener['id']}"
    patched = await api.patch(path, json={"version": "2"})
    assert patched.status_code == 200
    assert patched.json()["version"] == "2"
    # a listener made without one has an empty compute_config: an object, as published
    assert patched.json()["compute_config"] == {"k8s_namespaces": None}
    assert_published("Listener", patched.json())
    patched = await api.patch(path, json={"compute_config": {"k8s_namespaces": ["x"]}})
    assert patched.json()["compute_config"]["k8s_namespaces"] == ["x"]
    assert patched.json()["version"] == "2"
    # null changes nothing: the published Listener never has a null compute_config
    kept = await api.patch(path, json={"compute_config": None})
    assert kept.status_code == 200
    assert kept.json()["compute_config"]["k8s_namespaces"] == ["x"]
    assert_published("Listener", kept.json())
    assert (await api.get(path)).json()["compute_config"]["k8s_namespaces"] == ["x"]
    refused = await api.patch(path, json={"compute_id": "other", "version": "3"})
    assert refused.status_code == 422
    assert refused.json()["detail"][0]["loc"] == ["body", "compute_id"]
    assert (await api.get(path)).json()["version"] == "2"
    bad_type = await api.patch(path, json={"compute_config": {"k8s_namespaces": "x"}})
    assert bad_type.status_code == 422


async def test_put_replaces_but_keeps_immutables(api: httpx.AsyncClient) -> None:
    listener = (
        await api.post("/v2/listeners", json={**K8S, "compute_config": {"k8s_namespaces": ["a"]}})
    ).json()
    path = f"/v2/listeners/{listener['id']}"
    replaced = await api.put(path, json={"compute_type": "k8s", "compute_id": "cluster-1"})
    assert replaced.status_code == 200
    assert replaced.json()["version"] is None
    assert replaced.json()["compute_config"] == {"k8s_namespaces": None}
    assert_published("Listener", replaced.json())
    moved = await api.put(path, json={"compute_type": "k8s", "compute_id": "cluster-2"})
    assert moved.status_code == 422
    assert moved.json()["detail"][0]["loc"] == ["body", "compute_id"]


async def test_delete_listener(api: httpx.AsyncClient) -> None:
    listener = (await api.post("/v2/listeners", json=K8S)).json()
    path = f"/v2/listeners/{listener['id']}"
    assert (await api.delete(path)).status_code == 204
    assert (await api.get(path)).status_code == 404
    assert (await api.delete(path)).status_code == 404
    for method in ("GET", "PATCH", "PUT", "DELETE"):
        missing = await api.request(method, f"/v2/listeners/{uuid.uuid4()}", json=K8S)
        assert missing.status_code == 404, method
        assert "not found" in missing.json()["detail"]


async def test_deployment_may_reference_its_listener(api: httpx.AsyncClient) -> None:
    listener = (await api.post("/v2/listeners", json=K8S)).json()
    body = image_body()
    body["source_config"]["listener_id"] = listener["id"]
    body["source_config"]["listener_config"] = {"k8s_namespace": "prod"}
    created = await api.post("/v2/deployments", json=body)
    assert created.status_code == 201
    assert created.json()["source_config"]["listener_id"] == listener["id"]


async def test_a_listener_in_use_cannot_be_deleted(api: httpx.AsyncClient) -> None:
    """409 naming how many deployments use it; free again once they are gone or moved."""
    listener = (await api.post("/v2/listeners", json=K8S)).json()
    path = f"/v2/listeners/{listener['id']}"
    users = []
    for name in ("user-1", "user-2"):
        body = image_body(name)
        body["source_config"]["listener_id"] = listener["id"]
        users.append((await api.post("/v2/deployments", json=body)).json())
    refused = await api.delete(path)
    assert refused.status_code == 409
    assert "2 deployments" in refused.json()["detail"]
    assert (await api.get(path)).status_code == 200  # still there
    moved = await api.patch(
        f"/v2/deployments/{users[0]['id']}", json={"source_config": {"listener_id": None}}
    )
    assert moved.status_code == 200
    refused = await api.delete(path)
    assert refused.status_code == 409
    assert "1 deployment" in refused.json()["detail"]
    # a deployment being deleted no longer holds it
    assert (await api.delete(f"/v2/deployments/{users[1]['id']}")).status_code == 204
    assert (await api.delete(path)).status_code == 204


async def test_patch_to_an_unknown_listener_is_refused_like_post(api: httpx.AsyncClient) -> None:
    listener = (await api.post("/v2/listeners", json=K8S)).json()
    body = image_body()
    body["source_config"]["listener_id"] = listener["id"]
    created = (await api.post("/v2/deployments", json=body)).json()
    path = f"/v2/deployments/{created['id']}"
    loc = ["body", "source_config", "listener_id"]
    for unknown in (str(uuid.uuid4()),):
        refused = await api.patch(path, json={"source_config": {"listener_id": unknown}})
        assert refused.status_code == 422
        assert refused.json()["detail"][0]["loc"] == loc
    # the same, existing listener again is fine
    again = await api.patch(path, json={"source_config": {"listener_id": listener["id"]}})
    assert again.status_code == 200
    assert (await api.get(path)).json()["source_config"]["listener_id"] == listener["id"]


async def test_patch_to_a_dangling_listener_is_refused(
    emulator: tuple[FastAPI, httpx.AsyncClient],
) -> None:
    """A database may hold a listener_id whose listener is gone (deleted before the
    in-use check existed): naming it again in a PATCH is refused as POST refuses it."""
    app, api = emulator
    listener = (await api.post("/v2/listeners", json=K8S)).json()
    body = image_body()
    body["source_config"]["listener_id"] = listener["id"]
    created = (await api.post("/v2/deployments", json=body)).json()
    async with app.state.db.write() as conn:
        await conn.execute(delete(listeners).where(listeners.c.id == uuid.UUID(listener["id"])))
    path = f"/v2/deployments/{created['id']}"
    refused = await api.patch(path, json={"source_config": {"listener_id": listener["id"]}})
    assert refused.status_code == 422
    assert refused.json()["detail"][0]["loc"] == ["body", "source_config", "listener_id"]
    untouched = await api.patch(path, json={"source_config": {"custom_url": "https://x"}})
    assert untouched.status_code == 200  # a PATCH that does not name it is not its fault


@pytest.mark.postgres(only=True)
async def test_racing_creates_and_a_delete_never_leave_a_dangling_listener_id(
    api: httpx.AsyncClient,
) -> None:
    """On PostgreSQL requests run concurrently: the listener row lock orders a create
    naming it against its delete, so either the delete is refused or the creates are."""

    async def create(name: str, listener_id: str) -> httpx.Response:
        body = image_body(name)
        body["source_config"]["listener_id"] = listener_id
        return await api.post("/v2/deployments", json=body)

    for round_ in range(10):
        listener = (
            await api.post("/v2/listeners", json={**K8S, "compute_id": f"race-{round_}"})
        ).json()
        answers = await asyncio.gather(
            create(f"race-{round_}-a", listener["id"]),
            api.delete(f"/v2/listeners/{listener['id']}"),
            create(f"race-{round_}-b", listener["id"]),
        )
        created = [a for a in (answers[0], answers[2]) if a.status_code == 201]
        deleted = answers[1].status_code == 204
        assert {a.status_code for a in answers} <= {201, 204, 409, 422}
        assert not (deleted and created), [a.status_code for a in answers]
        exists = (await api.get(f"/v2/listeners/{listener['id']}")).status_code == 200
        users = [
            d
            for d in (await api.get("/v2/deployments", params={"limit": 100})).json()["resources"]
            if d["source_config"].get("listener_id") == listener["id"]
        ]
        assert exists or not users
