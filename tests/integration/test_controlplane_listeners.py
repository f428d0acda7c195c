"""Listeners API of the emulator."""
# ruff: noqa: F811  (pytest fixtures imported from the harness are parameters here)

from __future__ import annotations

import uuid

import httpx
import pytest
from _controlplane_harness import api, emulator, image_body  # noqa: F401  (fixtures)

K8S = {"compute_type": "k8s", "compute_id": "cluster-1", "version": "1"}

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
    assert patched.json()["compute_config"] is None
    patched = await api.patch(path, json={"compute_config": {"k8s_namespaces": ["x"]}})
    assert patched.json()["compute_config"]["k8s_namespaces"] == ["x"]
    assert patched.json()["version"] == "2"
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
    assert replaced.json()["compute_config"] is None
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
