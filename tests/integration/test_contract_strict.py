"""Strict mode: the emulator serves the published contract and nothing else.

The published OpenAPI (tests/support/published-contract.json, a copy of the service's
document reduced to facts) is compared with the emulator's own; and every extension
(docs/emulator.md) is shown to be off: admin routes and the listener PUT are gone,
the `name` and `compute_id` filters are ignored like any unknown query parameter.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from tests.support.emulator_app import (
    ADMIN,
    K8S_LISTENER,
    image_body,
    make_settings,
    running_app,
)

PUBLISHED = json.loads(
    (Path(__file__).parents[1] / "support" / "published-contract.json").read_text()
)
METHODS = {"get", "post", "put", "patch", "delete"}
# What the service serves besides the published contract (0.1.0), as its current client
# shows (langgraph-cli 0.4.40, host_backend.py): documented, and on in strict mode.
VENDOR_CLI_OPERATIONS = {
    ("POST", "/v2/deployments/{deployment_id}/upload-url"),
    ("POST", "/v2/deployments/{deployment_id}/push-token"),
    ("POST", "/v1/projects/{project_id}/revisions/{revision_id}/build_logs"),
    ("POST", "/v1/projects/{project_id}/revisions/{revision_id}/deploy_logs"),
    ("POST", "/v1/projects/{project_id}/deploy_logs"),
}
# Parameters of published operations the vendor's client sends besides (its agent mode:
# `langgraph deploy list --agent-id --agent-environment`).
VENDOR_CLI_PARAMETERS = {
    ("GET", "/v2/deployments"): {("agent_id", "query"), ("agent_environment", "query")},
}


@pytest.fixture
async def strict(database_url: str) -> AsyncIterator[tuple[FastAPI, httpx.AsyncClient]]:
    async with running_app(make_settings(database_url, step_seconds=3600, strict=True)) as pair:
        yield pair


def operations(document: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    return {
        (method.upper(), path): operation
        for path, item in document["paths"].items()
        for method, operation in item.items()
        if method in METHODS
    }


def parameters(operation: dict[str, Any]) -> set[tuple[str, str]]:
    return {(p["name"], p["in"]) for p in operation.get("parameters", [])}


async def test_the_openapi_document_shows_exactly_the_published_operations(
    strict: tuple[FastAPI, httpx.AsyncClient],
) -> None:
    """The published ones, and the vendor client's, which the contract predates."""
    _, api = strict
    ours = operations((await api.get("/openapi.json")).json())
    published = operations(PUBLISHED)
    assert sorted(ours) == sorted({*published, *VENDOR_CLI_OPERATIONS})
    for key, operation in published.items():
        vendor = VENDOR_CLI_PARAMETERS.get(key, set())
        assert parameters(ours[key]) == parameters(operation) | vendor, key
        assert set(operation["responses"]) <= set(ours[key]["responses"]), key


async def test_the_published_resource_shapes_are_required_as_published(
    strict: tuple[FastAPI, httpx.AsyncClient],
) -> None:
    _, api = strict
    schemas = (await api.get("/openapi.json")).json()["components"]["schemas"]
    published = PUBLISHED["components"]["schemas"]
    for ours, theirs in (
        ("Deployment", "Deployment"),
        ("Revision", "Revision"),
        ("Listener", "Listener"),
        ("Page_Deployment_", "DeploymentsList"),
        ("SecretReference", "SecretReference"),
        ("Secret", "Secret"),  # a deployment's `secrets` items, in answers too
    ):
        assert set(published[theirs]["required"]) <= set(schemas[ours]["required"]), ours
        assert set(published[theirs]["properties"]) <= set(schemas[ours]["properties"]), ours


async def test_strict_mode_turns_every_extension_off(
    strict: tuple[FastAPI, httpx.AsyncClient],
) -> None:
    _, api = strict
    for path in ("/_emulator/stats", "/_emulator/faults", "/healthz", "/readyz", "/v2/nowhere"):
        assert (await api.get(path)).status_code == 404, path
    for name in ("alpha", "alphabet"):
        assert (await api.post("/v2/deployments", json=image_body(name))).status_code == 201
    # the exact-name filter is an extension: ignored like any unknown parameter
    listed = (await api.get("/v2/deployments", params={"name": "alpha"})).json()
    assert sorted(d["name"] for d in listed["resources"]) == ["alpha", "alphabet"]
    listener = (await api.post("/v2/listeners", json=K8S_LISTENER)).json()
    await api.post("/v2/listeners", json={**K8S_LISTENER, "compute_id": "other"})
    by_compute = (await api.get("/v2/listeners", params={"compute_id": "other"})).json()
    assert len(by_compute["resources"]) == 2
    put = await api.put(f"/v2/listeners/{listener['id']}", json=K8S_LISTENER)
    assert put.status_code == 405  # the path exists (GET, PATCH, DELETE); PUT does not


async def test_strict_mode_serves_what_the_vendor_cli_calls(
    strict: tuple[FastAPI, httpx.AsyncClient],
) -> None:
    _, api = strict
    created = await api.post(
        "/v2/deployments",
        json={"name": "built", "source": "internal_source", "source_config": {}},
    )
    assert created.status_code == 201, created.text
    dep = created.json()["id"]
    upload = await api.post(f"/v2/deployments/{dep}/upload-url", json={})
    assert upload.status_code == 200
    assert upload.json()["upload_url"].startswith("http://emulator/_uploads/")
    push = await api.post(f"/v2/deployments/{dep}/push-token", json={})
    assert push.status_code == 400  # internal_docker only: the CLI's own message
    assert "only available for 'internal_docker'" in push.json()["detail"]
    logs = await api.post(f"/v1/projects/{dep}/deploy_logs", json={"limit": 5})
    assert logs.json() == {"logs": [], "next_offset": None}


async def test_outside_strict_mode_the_extensions_answer(database_url: str) -> None:
    async with running_app(make_settings(database_url, step_seconds=3600)) as (_, api):
        for name in ("alpha", "alphabet"):
            await api.post("/v2/deployments", json=image_body(name))
        listed = (await api.get("/v2/deployments", params={"name": "alpha"})).json()
        assert [d["name"] for d in listed["resources"]] == ["alpha"]
        assert (await api.get("/_emulator/stats", headers=ADMIN)).status_code == 200
        listener = (await api.post("/v2/listeners", json=K8S_LISTENER)).json()
        put = await api.put(f"/v2/listeners/{listener['id']}", json=K8S_LISTENER)
        assert put.status_code == 200
        paths = (await api.get("/openapi.json")).json()["paths"]
        assert "put" not in paths["/v2/listeners/{listener_id}"]


async def test_the_settings_flag_is_strict_too(database_url: str) -> None:
    settings = make_settings(database_url, step_seconds=3600).model_copy(update={"strict": True})
    async with running_app(settings) as (app, api):
        assert app.state.strict
        assert (await api.get("/_emulator/stats")).status_code == 404
        assert (await api.get("/v2/deployments")).status_code == 200
