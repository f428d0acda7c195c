"""Agent mode at the API (the vendor CLI's `langgraph deploy --agent-id A
--agent-environment E`): a create keyed by an agent and an environment, named by the
control plane, one per agent and environment (409 for a second), the list filters, the
agent in every answer, `is_preview` false, a workspace with agent mode off, and a
database from before the agent columns. On SQLite and PostgreSQL."""
# ruff: noqa: F811  (pytest fixtures imported from the harness are parameters here)

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import httpx
import pytest
from sqlalchemy import inspect, text
from sqlalchemy.ext.asyncio import create_async_engine
from tests.support.emulator_app import (  # noqa: F401  (fixtures are used by name)
    api,
    config_data,
    emulator,
    image_body,
    make_settings,
    running_app,
    wait_for,
)
from tests.support.published import assert_published

from deployplane.emulator.settings import Settings, parse_config
from deployplane.emulator.store.db import Database

pytestmark = pytest.mark.postgres

AGENT_TAKEN = "This agent already has a deployment in this environment"


def agent_body(agent_id: str = "support-bot", environment: str = "production") -> dict[str, Any]:
    body = image_body()
    del body["name"]
    return {**body, "agent": {"agent_id": agent_id, "environment": environment}}


async def create(api: httpx.AsyncClient, body: dict[str, Any]) -> dict[str, Any]:
    answer = await api.post("/v2/deployments", json=body)
    assert answer.status_code == 201, answer.text
    created: dict[str, Any] = answer.json()
    return created


def error_locs(answer: httpx.Response) -> list[list[str | int]]:
    assert answer.status_code == 422, answer.text
    return [error["loc"] for error in answer.json()["detail"]]


async def listed(api: httpx.AsyncClient, **params: Any) -> list[str]:
    answer = await api.get("/v2/deployments", params=params)
    assert answer.status_code == 200, answer.text
    return [item["name"] for item in answer.json()["resources"]]


async def test_an_agent_create_is_named_by_the_control_plane_and_shows_its_agent(
    api: httpx.AsyncClient,
) -> None:
    created = await create(api, agent_body("Support Bot", "production"))
    assert created["name"] == "support-bot-production"
    assert created["agent"] == {"agent_id": "Support Bot", "environment": "production"}
    assert created["is_preview"] is False
    assert_published("Deployment", created)
    got = (await api.get(f"/v2/deployments/{created['id']}")).json()
    assert got["agent"] == created["agent"]
    assert got["name"] == "support-bot-production"
    assert got["is_preview"] is False
    by_name = await create(api, image_body("by-name"))
    assert by_name["agent"] is None
    assert by_name["is_preview"] is False
    page = (await api.get("/v2/deployments")).json()["resources"]
    assert {item["name"]: item["is_preview"] for item in page} == {
        "support-bot-production": False,
        "by-name": False,
    }


async def test_a_second_deployment_of_an_agent_in_one_environment_is_a_409(
    api: httpx.AsyncClient,
) -> None:
    first = await create(api, agent_body("bot", "staging"))
    again = await api.post("/v2/deployments", json=agent_body("bot", "staging"))
    assert again.status_code == 409
    assert again.json()["detail"] == f"{AGENT_TAKEN}: deployment {first['id']}."
    other_environment = await create(api, agent_body("bot", "production"))
    other_agent = await create(api, agent_body("bot-2", "staging"))
    assert (other_environment["name"], other_agent["name"]) == ("bot-production", "bot-2-staging")
    assert await listed(api) == ["bot-staging", "bot-production", "bot-2-staging"]


async def test_concurrent_creates_of_one_agent_and_environment_make_one(
    api: httpx.AsyncClient,
) -> None:
    answers = await asyncio.gather(
        *(api.post("/v2/deployments", json=agent_body("racer", "development")) for _ in range(10))
    )
    codes = sorted(answer.status_code for answer in answers)
    assert codes == [201] + [409] * 9
    assert all(a.json()["detail"].startswith(AGENT_TAKEN) for a in answers if a.status_code == 409)
    assert await listed(api, agent_id="racer") == ["racer-development"]


async def test_a_taken_name_gets_the_deployment_id_as_a_suffix(api: httpx.AsyncClient) -> None:
    await create(api, image_body("bot-staging"))
    created = await create(api, agent_body("bot", "staging"))
    assert created["name"] == f"bot-staging-{uuid.UUID(created['id']).hex[:8]}"
    # an agent id with nothing a name may hold
    assert (await create(api, agent_body("___", "staging")))["name"] == "agent-staging"


async def test_name_and_agent_one_of_the_two_each_field_named(api: httpx.AsyncClient) -> None:
    both = {**agent_body(), "name": "named"}
    assert error_locs(await api.post("/v2/deployments", json=both)) == [["body", "name"]]
    neither = agent_body()
    del neither["agent"]
    assert error_locs(await api.post("/v2/deployments", json=neither)) == [["body", "name"]]
    bad_environment = agent_body("bot", "qa")
    assert error_locs(await api.post("/v2/deployments", json=bad_environment)) == [
        ["body", "agent", "environment"]
    ]
    for agent_id in ("", " bot", "bot\n", "x" * 129):
        answer = await api.post("/v2/deployments", json=agent_body(agent_id))
        assert error_locs(answer) == [["body", "agent", "agent_id"]], agent_id
    missing = {**agent_body(), "agent": {"agent_id": "bot"}}
    assert error_locs(await api.post("/v2/deployments", json=missing)) == [
        ["body", "agent", "environment"]
    ]
    assert await listed(api) == []


async def test_the_list_filters_by_agent_and_environment_with_the_others_and_paging(
    api: httpx.AsyncClient,
) -> None:
    for agent_id in ("alpha", "beta"):
        for environment in ("development", "staging", "production"):
            await create(api, agent_body(agent_id, environment))
    await create(api, image_body("alpha-by-name"))
    assert await listed(api, agent_id="alpha") == [
        "alpha-development",
        "alpha-staging",
        "alpha-production",
    ]
    assert await listed(api, agent_environment="staging") == ["alpha-staging", "beta-staging"]
    assert await listed(api, agent_id="beta", agent_environment="production") == ["beta-production"]
    assert await listed(api, agent_id="alph") == []  # exact, not a substring
    assert await listed(api, agent_id="alpha", name_contains="prod") == ["alpha-production"]
    assert await listed(api, agent_id="alpha", status="READY") == []
    first = (await api.get("/v2/deployments", params={"agent_id": "alpha", "limit": 2})).json()
    assert [item["name"] for item in first["resources"]] == ["alpha-development", "alpha-staging"]
    assert first["offset"] == 2
    rest = await listed(api, agent_id="alpha", limit=2, offset=first["offset"])
    assert rest == ["alpha-production"]
    bad = await api.get("/v2/deployments", params={"agent_environment": "qa"})
    assert error_locs(bad) == [["query", "agent_environment"]]


async def test_an_agent_cannot_change_by_a_patch(api: httpx.AsyncClient) -> None:
    created = await create(api, agent_body("bot", "development"))
    path = f"/v2/deployments/{created['id']}"
    moved = await api.patch(path, json={"agent": {"agent_id": "bot", "environment": "production"}})
    assert error_locs(moved) == [["body", "agent"]]
    same = await api.patch(
        path,
        json={
            "agent": {"agent_id": "bot", "environment": "development"},
            "source_revision_config": {"image_uri": "registry.example.com/app:2"},
        },
    )
    assert same.status_code == 200, same.text
    assert same.json()["agent"] == created["agent"]
    assert same.json()["latest_revision_id"] != created["latest_revision_id"]


async def test_an_agent_deleted_can_be_deployed_again(database_url: str) -> None:
    """Its tracing project outlives it, keeping the name: the new one gets a suffix."""
    async with running_app(make_settings(database_url, step_seconds=0.01)) as (_, api):
        first = await create(api, agent_body("bot", "production"))
        assert (await api.delete(f"/v2/deployments/{first['id']}")).status_code == 204
        refused = await api.post("/v2/deployments", json=agent_body("bot", "production"))
        assert refused.status_code == 409  # until it is removed, it is the agent's

        async def removed() -> bool:
            return (await api.get(f"/v2/deployments/{first['id']}")).status_code == 404

        await wait_for(removed)
        again = await create(api, agent_body("bot", "production"))
        assert again["name"] == f"bot-production-{uuid.UUID(again['id']).hex[:8]}"


async def test_a_workspace_with_agent_mode_off_refuses_the_agent_fields(
    database_url: str,
) -> None:
    data = config_data(step_seconds=3600)
    data["workspaces"][0]["agent_mode"] = False
    settings = Settings(database_url=database_url, config=parse_config(data))
    async with running_app(settings) as (_, api):
        created = await api.post("/v2/deployments", json=agent_body())
        assert created.status_code == 403
        assert created.json()["detail"].startswith("Agent mode is off for this workspace")
        for params in ({"agent_id": "bot"}, {"agent_environment": "staging"}):
            answer = await api.get("/v2/deployments", params=params)
            assert answer.status_code == 403, params
        assert (await api.post("/v2/deployments", json=image_body("named"))).status_code == 201
        assert await listed(api) == ["named"]


async def test_agent_mode_is_served_in_strict_mode(database_url: str) -> None:
    """The vendor's CLI sends it: part of the service as far as can be known."""
    settings = make_settings(database_url, step_seconds=3600, strict=True)
    async with running_app(settings) as (_, api):
        created = await create(api, agent_body("bot", "staging"))
        assert created["agent"] == {"agent_id": "bot", "environment": "staging"}
        assert await listed(api, agent_id="bot", agent_environment="staging") == ["bot-staging"]
        again = await api.post("/v2/deployments", json=agent_body("bot", "staging"))
        assert again.status_code == 409
        document = (await api.get("/openapi.json")).json()
        create_body = document["components"]["schemas"]["DeploymentCreate"]
        assert "agent" in create_body["properties"]
        params = {p["name"] for p in document["paths"]["/v2/deployments"]["get"]["parameters"]}
        assert {"agent_id", "agent_environment"} <= params


async def test_a_database_from_before_the_agent_columns_gets_them_and_the_index(
    database_url: str,
) -> None:
    async with running_app(make_settings(database_url, step_seconds=3600)) as (_, api):
        old = await create(api, image_body("from-before"))
    db = Database(database_url)
    async with db.write() as conn:
        await conn.execute(text("DROP INDEX uq_deployment_workspace_agent"))
        for column in ("agent_id", "agent_environment"):
            await conn.execute(text(f"ALTER TABLE deployments DROP COLUMN {column}"))
    await db.dispose()
    async with running_app(make_settings(database_url, step_seconds=3600)) as (_, api):
        got = (await api.get(f"/v2/deployments/{old['id']}")).json()
        assert (got["name"], got["agent"]) == ("from-before", None)
        await create(api, agent_body("bot", "production"))
        again = await api.post("/v2/deployments", json=agent_body("bot", "production"))
        assert again.status_code == 409
        assert await listed(api, agent_id="bot") == ["bot-production"]
    engine = create_async_engine(database_url)
    async with engine.connect() as conn:
        indexes = await conn.run_sync(lambda sync: inspect(sync).get_indexes("deployments"))
    await engine.dispose()
    agent_index = next(i for i in indexes if i["name"] == "uq_deployment_workspace_agent")
    assert agent_index["unique"]
    assert agent_index["column_names"] == ["workspace_id", "agent_id", "agent_environment"]
