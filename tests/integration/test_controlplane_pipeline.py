"""The revision pipeline: state order, supersede, configured failures, deletion,
and state kept across a restart of the emulator on the same database. Every test runs
on SQLite and on PostgreSQL (conftest.py)."""

from __future__ import annotations

import asyncio

import httpx
import pytest
from tests.support.emulator_app import (
    git_body,
    image_body,
    make_settings,
    revision_status,
    running_app,
    wait_for,
)

from deployplane.emulator.store.answers import SECRET_VALUE_MASK

GIT_PATH = [
    "CREATING",
    "QUEUED",
    "AWAITING_BUILD",
    "BUILDING",
    "AWAITING_DEPLOY",
    "DEPLOYING",
    "DEPLOYED",
]
IMAGE_PATH = ["CREATING", "QUEUED", "AWAITING_DEPLOY", "DEPLOYING", "DEPLOYED"]

pytestmark = pytest.mark.postgres


async def observed_statuses(
    client: httpx.AsyncClient, deployment_id: str, revision_id: str
) -> list[str]:
    """Polls much faster than a step and records each distinct state seen."""
    seen: list[str] = []

    async def terminal() -> bool:
        status = await revision_status(client, deployment_id, revision_id)
        if not seen or seen[-1] != status:
            seen.append(status)
        return status in {"DEPLOYED", "DEPLOY_FAILED", "BUILD_FAILED", "CREATE_FAILED"}

    await wait_for(terminal, interval=0.005)
    return seen


# A step long enough that a poll (a GET every 5 ms, each one transaction) sees every
# state even on a loaded 2-core machine: at 0.15 s, PostgreSQL under load missed one.
WALK_STEP_SECONDS = 0.5


async def test_git_revision_walks_every_state_in_order(database_url: str) -> None:
    async with running_app(make_settings(database_url, step_seconds=WALK_STEP_SECONDS)) as (
        _,
        client,
    ):
        created = (await client.post("/v2/deployments", json=git_body())).json()
        seen = await observed_statuses(client, created["id"], created["latest_revision_id"])
        assert seen == GIT_PATH
        deployment = (await client.get(f"/v2/deployments/{created['id']}")).json()
        assert deployment["status"] == "READY"
        assert deployment["active_revision_id"] == created["latest_revision_id"]
        sha = created["source_revision_config"]["repo_commit_sha"]
        assert deployment["image_version"] == sha[:7]


async def test_image_revision_skips_the_build_states(database_url: str) -> None:
    async with running_app(make_settings(database_url, step_seconds=WALK_STEP_SECONDS)) as (
        _,
        client,
    ):
        created = (await client.post("/v2/deployments", json=image_body())).json()
        seen = await observed_statuses(client, created["id"], created["latest_revision_id"])
        assert seen == IMAGE_PATH
        deployment = (await client.get(f"/v2/deployments/{created['id']}")).json()
        assert deployment["image_version"] == "registry.example.com/app:1"


async def test_step_zero_deploys_as_fast_as_possible(database_url: str) -> None:
    async with running_app(make_settings(database_url, step_seconds=0)) as (_, client):
        created = (await client.post("/v2/deployments", json=image_body())).json()

        async def ready() -> bool:
            got = (await client.get(f"/v2/deployments/{created['id']}")).json()
            return bool(got["status"] == "READY")

        await wait_for(ready)


async def test_newer_revision_skips_a_queued_one(database_url: str) -> None:
    async with running_app(make_settings(database_url, step_seconds=3600)) as (_, client):
        created = (await client.post("/v2/deployments", json=image_body())).json()
        first = created["latest_revision_id"]
        patched = await client.patch(
            f"/v2/deployments/{created['id']}",
            json={"source_revision_config": {"image_uri": "r/app:2"}},
        )
        assert await revision_status(client, created["id"], first) == "SKIPPED"
        second = patched.json()["latest_revision_id"]
        assert await revision_status(client, created["id"], second) == "CREATING"


async def test_newer_revision_interrupts_one_that_is_building(database_url: str) -> None:
    async with running_app(make_settings(database_url, step_seconds=0.2)) as (_, client):
        created = (await client.post("/v2/deployments", json=git_body())).json()
        first = created["latest_revision_id"]

        async def building() -> bool:
            return await revision_status(client, created["id"], first) == "AWAITING_BUILD"

        await wait_for(building, interval=0.005)
        await client.patch(
            f"/v2/deployments/{created['id']}", json={"source_revision_config": {"repo_ref": "v2"}}
        )
        assert await revision_status(client, created["id"], first) == "INTERRUPTED"
        await asyncio.sleep(0.3)  # the worker must not move a superseded revision on
        assert await revision_status(client, created["id"], first) == "INTERRUPTED"


async def test_active_revision_stays_until_the_new_one_deploys(database_url: str) -> None:
    async with running_app(make_settings(database_url, step_seconds=0.05)) as (_, client):
        created = (await client.post("/v2/deployments", json=image_body())).json()
        path = f"/v2/deployments/{created['id']}"

        async def active() -> str | None:
            value: str | None = (await client.get(path)).json()["active_revision_id"]
            return value

        assert await wait_for(active) == created["latest_revision_id"]
        patched = (
            await client.patch(path, json={"source_revision_config": {"image_uri": "r/app:2"}})
        ).json()
        assert patched["active_revision_id"] == created["latest_revision_id"]
        assert patched["status"] == "READY"

        async def switched() -> bool:
            return bool(await active() == patched["latest_revision_id"])

        await wait_for(switched)
        assert (await client.get(path)).json()["image_version"] == "r/app:2"


async def test_configured_failures_stop_the_revision(database_url: str) -> None:
    failures = [
        {"image_uri_regex": ".*:broken$", "status": "DEPLOY_FAILED"},
        {"repo_ref_regex": "^bad-build$", "status": "BUILD_FAILED"},
        {"name_regex": "^doomed", "status": "CREATE_FAILED"},
    ]
    settings = make_settings(database_url, step_seconds=0.02, pipeline={"failures": failures})
    async with running_app(settings) as (_, client):
        broken = (
            await client.post("/v2/deployments", json=image_body("b", image="r/app:broken"))
        ).json()
        bad_build = (await client.post("/v2/deployments", json=git_body("g", "bad-build"))).json()
        doomed = (await client.post("/v2/deployments", json=image_body("doomed-1"))).json()
        seen_broken = await observed_statuses(client, broken["id"], broken["latest_revision_id"])
        assert seen_broken[-1] == "DEPLOY_FAILED"
        assert "DEPLOYING" in seen_broken
        seen_build = await observed_statuses(
            client, bad_build["id"], bad_build["latest_revision_id"]
        )
        assert seen_build[-1] == "BUILD_FAILED"
        seen_doomed = await observed_statuses(client, doomed["id"], doomed["latest_revision_id"])
        assert seen_doomed[-1] == "CREATE_FAILED"
        deployment = (await client.get(f"/v2/deployments/{broken['id']}")).json()
        assert deployment["status"] == "AWAITING_DATABASE"
        assert deployment["active_revision_id"] is None


async def test_delete_removes_the_deployment_after_one_step(database_url: str) -> None:
    async with running_app(make_settings(database_url, step_seconds=0.05)) as (_, client):
        created = (await client.post("/v2/deployments", json=image_body())).json()
        path = f"/v2/deployments/{created['id']}?delete_tracing_project=true"
        assert (await client.delete(path)).status_code == 204

        async def gone() -> bool:
            answer = await client.get(f"/v2/deployments/{created['id']}")
            return answer.status_code == 404

        await wait_for(gone)
        # its name (and, deleted with it, its tracing project) are free again
        again = await client.post("/v2/deployments", json=image_body())
        assert again.status_code == 201


async def test_state_survives_a_restart_and_the_pipeline_resumes(database_url: str) -> None:
    async with running_app(make_settings(database_url, step_seconds=0.3)) as (_, client):
        created = (await client.post("/v2/deployments", json=image_body())).json()
        listener = await client.post(
            "/v2/listeners", json={"compute_type": "k8s", "compute_id": "c1", "compute_config": {}}
        )
        assert listener.status_code == 201
    # a new app (new engine, new worker) on the same file
    async with running_app(make_settings(database_url, step_seconds=0.02)) as (_, client):
        got = await client.get(f"/v2/deployments/{created['id']}")
        assert got.status_code == 200
        assert got.json()["name"] == "img-app"
        assert got.json()["secrets"] == [{"name": "OPENAI_API_KEY", "value": SECRET_VALUE_MASK}]
        assert (await client.get(f"/v2/listeners/{listener.json()['id']}")).status_code == 200
        seen = await observed_statuses(client, created["id"], created["latest_revision_id"])
        assert seen[-1] == "DEPLOYED"
        duplicate = await client.post("/v2/deployments", json=image_body())
        assert duplicate.status_code == 400
