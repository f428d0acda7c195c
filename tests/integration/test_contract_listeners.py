"""The published contract of the listener operations, checked against the emulator
(issue 13's facts): list `{resources, offset}` paged by limit/offset, POST 201, GET,
PATCH, DELETE 204 with an empty body, 409 for a second listener of one compute_id."""

from __future__ import annotations

import uuid

import httpx
from tests.support.emulator_app import KEY_SAAS, WORKSPACE_SAAS, api, emulator

__all__ = ["api", "emulator"]

LISTENER_FIELDS = {"compute_type", "compute_id", "compute_config", "id", "created_at", "updated_at"}


def k8s(compute_id: str) -> dict[str, object]:
    return {"compute_type": "k8s", "compute_id": compute_id, "compute_config": {}}


async def test_listener_operations_answer_the_published_codes_and_shapes(
    api: httpx.AsyncClient,
) -> None:
    created = await api.post("/v2/listeners", json=k8s("c-1"))
    assert created.status_code == 201
    assert set(created.json()) >= LISTENER_FIELDS
    path = f"/v2/listeners/{created.json()['id']}"
    assert (await api.get(path)).status_code == 200
    patched = await api.patch(path, json={"version": "2"})
    assert patched.status_code == 200
    assert patched.json()["version"] == "2"
    assert (await api.post("/v2/listeners", json=k8s("c-1"))).status_code == 409
    deleted = await api.delete(path)
    assert deleted.status_code == 204
    assert deleted.content == b""
    assert (await api.get(path)).status_code == 404
    assert (await api.delete(f"/v2/listeners/{uuid.uuid4()}")).status_code == 404


async def test_a_create_without_compute_config_is_422_naming_it(api: httpx.AsyncClient) -> None:
    """The published create requires compute_config, an object (`{}` says nothing)."""
    without = {"compute_type": "k8s", "compute_id": "c-none"}
    for body in (without, {**without, "compute_config": None}):
        refused = await api.post("/v2/listeners", json=body)
        assert refused.status_code == 422, refused.text
        assert [e["loc"] for e in refused.json()["detail"]] == [["body", "compute_config"]]
    assert (await api.get("/v2/listeners")).json()["resources"] == []


async def test_listeners_page_with_limit_and_offset_to_the_last_page(
    api: httpx.AsyncClient,
) -> None:
    for i in range(5):
        assert (await api.post("/v2/listeners", json=k8s(f"c-{i}"))).status_code == 201
    seen: list[str] = []
    offset = 0
    while True:
        body = (await api.get("/v2/listeners", params={"limit": 2, "offset": offset})).json()
        assert set(body) == {"resources", "offset"}
        assert isinstance(body["offset"], int)
        seen += [listener["compute_id"] for listener in body["resources"]]
        if len(body["resources"]) < 2:
            break
        offset = body["offset"]
    assert sorted(seen) == [f"c-{i}" for i in range(5)]


async def test_a_workspace_that_may_not_have_listeners_gets_403(api: httpx.AsyncClient) -> None:
    saas = {"X-Api-Key": KEY_SAAS}
    answer = await api.post("/v2/listeners", json=k8s("c-9"), headers=saas)
    assert answer.status_code == 403
    assert str(WORKSPACE_SAAS) in answer.json()["detail"]
    path = f"/v2/listeners/{uuid.uuid4()}"
    assert (await api.get(path, headers=saas)).status_code == 403
    assert (await api.patch(path, json={}, headers=saas)).status_code == 403
    assert (await api.delete(path, headers=saas)).status_code == 403
