"""Authentication and tenant isolation, and the read-only lookups."""
# ruff: noqa: F811  (pytest fixtures imported from the harness are parameters here)

from __future__ import annotations

import uuid

import httpx
import pytest
from fastapi import FastAPI
from tests.support.emulator_app import (  # noqa: F401  (fixtures are used by name)
    INTEGRATION_A,
    KEY_A,
    KEY_B,
    KEY_SHARED,
    REPO_URL,
    TOKEN_A,
    WORKSPACE_A,
    WORKSPACE_B,
    api,
    emulator,
    image_body,
)

Emulator = tuple[FastAPI, httpx.AsyncClient]

# Fixed ids (never a row of the emulator: it makes uuid4s), so that the test ids are
# the same in every run and in every pytest-xdist worker.
ENDPOINTS = [
    ("GET", "/v2/deployments"),
    ("POST", "/v2/deployments"),
    ("GET", f"/v2/deployments/{uuid.UUID(int=1)}"),
    ("PATCH", f"/v2/deployments/{uuid.UUID(int=2)}"),
    ("DELETE", f"/v2/deployments/{uuid.UUID(int=3)}"),
    ("GET", f"/v2/deployments/{uuid.UUID(int=4)}/revisions"),
    ("GET", f"/v2/deployments/{uuid.UUID(int=5)}/revisions/{uuid.UUID(int=6)}"),
    ("GET", "/v2/listeners"),
    ("POST", "/v2/listeners"),
    ("GET", f"/v2/listeners/{uuid.UUID(int=7)}"),
    ("PATCH", f"/v2/listeners/{uuid.UUID(int=8)}"),
    ("PUT", f"/v2/listeners/{uuid.UUID(int=9)}"),
    ("DELETE", f"/v2/listeners/{uuid.UUID(int=10)}"),
    ("GET", f"/v1/integrations/git_host/{INTEGRATION_A}/repos"),
    ("GET", "/v2/auth/providers/prov-1"),
    ("GET", "/_emulator/stats"),
    ("PUT", "/_emulator/faults"),
]


@pytest.mark.parametrize(("method", "path"), ENDPOINTS)
@pytest.mark.parametrize(
    "headers",
    [{}, {"X-Api-Key": "wrong"}, {"Authorization": "Bearer wrong"}, {"Authorization": KEY_A}],
    ids=["none", "bad-key", "bad-token", "not-bearer"],
)
async def test_every_endpoint_requires_a_valid_credential(
    emulator: Emulator, method: str, path: str, headers: dict[str, str]
) -> None:
    app, _ = emulator
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://emulator") as anonymous:
        response = await anonymous.request(method, path, headers=headers, json={})
    assert response.status_code == 401
    assert KEY_A not in response.text


async def test_the_probes_need_no_credential(emulator: Emulator) -> None:
    app, _ = emulator
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://emulator") as anonymous:
        alive = await anonymous.get("/healthz")
        ready = await anonymous.get("/readyz")
    assert (alive.status_code, ready.status_code) == (200, 200)
    assert ready.json() == {"status": "ok"}


async def test_bearer_token_authenticates(api: httpx.AsyncClient) -> None:
    response = await api.get(
        "/v2/deployments", headers={"X-Api-Key": "", "Authorization": f"Bearer {TOKEN_A}"}
    )
    assert response.status_code == 200


async def test_tenant_header_of_another_workspace_is_403(api: httpx.AsyncClient) -> None:
    response = await api.get("/v2/deployments", headers={"X-Tenant-Id": str(WORKSPACE_B)})
    assert response.status_code == 403
    unknown = await api.get("/v2/deployments", headers={"X-Tenant-Id": str(uuid.uuid4())})
    assert unknown.status_code == 403
    garbage = await api.get("/v2/deployments", headers={"X-Tenant-Id": "not-a-uuid"})
    assert garbage.status_code == 403
    own = await api.get("/v2/deployments", headers={"X-Tenant-Id": str(WORKSPACE_A)})
    assert own.status_code == 200


@pytest.mark.postgres  # tenancy is in every query
async def test_a_shared_key_acts_in_the_workspace_named_by_tenant_id(
    api: httpx.AsyncClient,
) -> None:
    as_b = {"X-Api-Key": KEY_SHARED, "X-Tenant-Id": str(WORKSPACE_B)}
    created = await api.post("/v2/deployments", json=image_body("in-b"), headers=as_b)
    assert created.status_code == 201
    seen_by_b = await api.get("/v2/deployments", headers={"X-Api-Key": KEY_B})
    assert [d["name"] for d in seen_by_b.json()["resources"]] == ["in-b"]
    seen_by_a = await api.get("/v2/deployments")
    assert seen_by_a.json()["resources"] == []


@pytest.mark.postgres  # tenancy is in every query
async def test_workspaces_are_isolated(api: httpx.AsyncClient) -> None:
    created = (await api.post("/v2/deployments", json=image_body())).json()
    listener = (
        await api.post(
            "/v2/listeners", json={"compute_type": "k8s", "compute_id": "c", "compute_config": {}}
        )
    ).json()
    as_b = {"X-Api-Key": KEY_B}
    base = f"/v2/deployments/{created['id']}"
    assert (await api.get(base, headers=as_b)).status_code == 404
    assert (await api.patch(base, json={}, headers=as_b)).status_code == 404
    assert (await api.delete(base, headers=as_b)).status_code == 404
    assert (await api.get(f"{base}/revisions", headers=as_b)).status_code == 404
    revision = f"{base}/revisions/{created['latest_revision_id']}"
    assert (await api.get(revision, headers=as_b)).status_code == 404
    assert (await api.get(f"/v2/listeners/{listener['id']}", headers=as_b)).status_code == 404
    assert (await api.delete(f"/v2/listeners/{listener['id']}", headers=as_b)).status_code == 404
    listed = await api.get("/v2/deployments", headers=as_b)
    assert listed.json()["resources"] == []
    # the same name is free in another workspace
    other = await api.post("/v2/deployments", json=image_body(), headers=as_b)
    assert other.status_code == 201
    repos = f"/v1/integrations/git_host/{INTEGRATION_A}/repos"
    assert (await api.get(repos, headers=as_b)).status_code == 404
    assert (await api.get("/v2/auth/providers/prov-1", headers=as_b)).status_code == 404


async def test_repository_listing(api: httpx.AsyncClient) -> None:
    response = await api.get(f"/v1/integrations/git_host/{INTEGRATION_A}/repos")
    assert response.status_code == 200
    assert response.json() == [
        {
            "host_integration_id": str(INTEGRATION_A),
            "id": 101,
            "name": "support-bot",
            "owner": "acme",
            "url": REPO_URL,
            "default_branch": "main",
        }
    ]
    missing = await api.get(f"/v1/integrations/git_host/{uuid.uuid4()}/repos")
    assert missing.status_code == 404
    malformed = await api.get("/v1/integrations/git_host/nope/repos")
    assert malformed.status_code == 422


async def test_oauth_provider_lookup(api: httpx.AsyncClient) -> None:
    response = await api.get("/v2/auth/providers/prov-1")
    assert response.status_code == 200
    body = response.json()
    assert body["provider_id"] == "acme-sso"
    assert body["uses_pkce"] is True
    assert body["code_challenge_method"] == "S256"
    assert body["provider_type"] == "oidc"
    assert body["created_at"]
    assert (await api.get("/v2/auth/providers/nope")).status_code == 404
