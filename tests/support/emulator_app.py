"""Shared set-up of the emulator's integration tests: its workspaces, an in-process app.

httpx.ASGITransport does not run the ASGI lifespan, so `running_app` enters the
app's lifespan itself (schema creation and the pipeline worker start there). A test
module takes the fixtures (`emulator`, `api`) by importing them by name; they run on
the `database_url` fixture of tests/integration/conftest.py.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from deployplane.emulator.settings import Settings, parse_config
from deployplane.emulator.web.app import create_app

WORKSPACE_A = uuid.UUID("11111111-1111-1111-1111-111111111111")
WORKSPACE_B = uuid.UUID("33333333-3333-3333-3333-333333333333")
WORKSPACE_SAAS = uuid.UUID("44444444-4444-4444-4444-444444444444")
INTEGRATION_A = uuid.UUID("22222222-2222-2222-2222-222222222222")
KEY_A = "key-a"
TOKEN_A = "token-a"
KEY_B = "key-b"
KEY_SAAS = "key-saas"
KEY_SHARED = "key-shared"
ADMIN_KEY = "admin-key"  # /_emulator/* only, sent as X-Admin-Key
ADMIN = {"X-Admin-Key": ADMIN_KEY}
REPO_URL = "https://git.example.com/acme/support-bot"
K8S_LISTENER = {
    "compute_type": "k8s",
    "compute_id": "cluster-1",
    "compute_config": {},
    "version": "1",
}


def config_data(*, step_seconds: float = 0.0, **extra: Any) -> dict[str, Any]:
    return {
        "workspaces": [
            {
                "id": str(WORKSPACE_A),
                "name": "team-a",
                "api_keys": [KEY_A, KEY_SHARED],
                "bearer_tokens": [TOKEN_A],
                "mode": "both",
                "integrations": [
                    {
                        "id": str(INTEGRATION_A),
                        "repositories": [
                            {
                                "id": 101,
                                "name": "support-bot",
                                "owner": "acme",
                                "url": REPO_URL,
                                "default_branch": "main",
                            }
                        ],
                    }
                ],
                "oauth_providers": [
                    {
                        "id": "prov-1",
                        "organization_id": "org-1",
                        "provider_id": "acme-sso",
                        "name": "Acme SSO",
                        "client_id": "cid",
                        "auth_url": "https://sso.example.com/auth",
                        "token_url": "https://sso.example.com/token",
                        "uses_pkce": True,
                        "code_challenge_method": "S256",
                        "provider_type": "oidc",
                    }
                ],
            },
            {
                "id": str(WORKSPACE_B),
                "name": "team-b",
                "api_keys": [KEY_B, KEY_SHARED],
                "mode": "self_hosted",
            },
            {"id": str(WORKSPACE_SAAS), "name": "saas", "api_keys": [KEY_SAAS], "mode": "saas"},
        ],
        "pipeline": {"step_seconds": step_seconds, **extra.pop("pipeline", {})},
        "admin_api_keys": [ADMIN_KEY],
        **extra,
    }


def make_settings(database: Path | str, *, strict: bool = False, **kwargs: Any) -> Settings:
    """Settings on `database`: a directory (SQLite file in it) or a URL (the
    `database_url` fixture of tests/integration/conftest.py, SQLite or PostgreSQL)."""
    url = (
        database
        if isinstance(database, str)
        else f"sqlite+aiosqlite:///{database / 'controlplane.db'}"
    )
    return Settings(database_url=url, config=parse_config(config_data(**kwargs)), strict=strict)


@asynccontextmanager
async def running_app(
    settings: Settings, *, api_key: str | None = KEY_A
) -> AsyncIterator[tuple[FastAPI, httpx.AsyncClient]]:
    app = create_app(settings)
    headers = {"X-Api-Key": api_key} if api_key else {}
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://emulator", headers=headers
        ) as client,
    ):
        yield app, client


def image_body(name: str = "img-app", image: str = "registry.example.com/app:1") -> dict[str, Any]:
    return {
        "name": name,
        "source": "external_docker",
        "source_config": {"resource_spec": {"min_scale": 1}},
        "source_revision_config": {"image_uri": image},
        "secrets": [{"name": "OPENAI_API_KEY", "value": "sk-very-secret-value"}],
    }


def git_body(name: str = "git-app", repo_ref: str = "main") -> dict[str, Any]:
    return {
        "name": name,
        "source": "git_host",
        "source_config": {
            "integration_id": str(INTEGRATION_A),
            "repo_url": REPO_URL,
            "build_on_push": False,
        },
        "source_revision_config": {"repo_ref": repo_ref, "graph_config_path": "langgraph.json"},
    }


async def wait_for(
    probe: Callable[[], Any], *, within: float = 10.0, interval: float = 0.01
) -> Any:
    """Polls an async probe until it returns a truthy value (not a timing assertion:
    the timeout only bounds a hang)."""
    deadline = asyncio.get_running_loop().time() + within
    while True:
        value = await probe()
        if value:
            return value
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError("condition not reached before the timeout")
        await asyncio.sleep(interval)


async def revision_status(client: httpx.AsyncClient, deployment_id: str, revision_id: str) -> str:
    response = await client.get(f"/v2/deployments/{deployment_id}/revisions/{revision_id}")
    assert response.status_code == 200, response.text
    status: str = response.json()["status"]
    return status


@pytest.fixture
async def emulator(database_url: str) -> AsyncIterator[tuple[FastAPI, httpx.AsyncClient]]:
    """An emulator whose revisions stay put (long steps): API behaviour only. On SQLite,
    and also on PostgreSQL for tests marked `postgres` (tests/integration/conftest.py)."""
    async with running_app(make_settings(database_url, step_seconds=3600)) as pair:
        yield pair


@pytest.fixture
async def api(emulator: tuple[FastAPI, httpx.AsyncClient]) -> httpx.AsyncClient:
    """A client of workspace A (api key), on the `emulator` fixture."""
    return emulator[1]
