"""A change of what the data plane renders (resource_spec, say) reaches what runs,
whatever the deployment's latest revision is doing when the PATCH lands
(docs/emulator.md, "Changes without a revision"):

- on its way (CREATING .. DEPLOYING): no new revision; it deploys with the change;
- DEPLOYED: rendered again in place (tests/integration/test_dataplane_rerender.py);
- ended without deploying (CREATE_FAILED, BUILD_FAILED, DEPLOY_FAILED): a new revision
  with its source revision config (and a git_host one's commit) retries it.

Driven step by step on the emulator in-process: on the simulated data plane (the
pipeline's timers), and with a listener agent whose render refuses the first spec.
"""
# ruff: noqa: F811  (pytest fixtures imported from the harness are parameters here)

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from tests.support.agent_world import Clock, World, clock, dp_client, world  # noqa: F401
from tests.support.emulator_app import (  # noqa: F401
    KEY_A,
    api,
    emulator,
    git_body,
    image_body,
    make_settings,
    running_app,
)

from deployplane.dataplane.render import SERVER
from deployplane.dataplane.render.context import LABEL_COMPONENT

RESOURCES = {"source_config": {"resource_spec": {"min_scale": 1, "max_scale": 3}}}
# Only a deployment's first revision fails: the retry a fix makes gets past it.
FAILURES = [
    {"name_regex": "^build-fails", "first_revisions": 1, "status": "BUILD_FAILED"},
    {"name_regex": "^deploy-fails", "first_revisions": 1, "status": "DEPLOY_FAILED"},
    {"name_regex": "^create-fails", "first_revisions": 1, "status": "CREATE_FAILED"},
]


@pytest.fixture
async def timed(database_url: str) -> AsyncIterator[tuple[FastAPI, httpx.AsyncClient]]:
    """The emulator with the failure rules above; its revisions move only on the clock."""
    settings = make_settings(database_url, step_seconds=3600, pipeline={"failures": FAILURES})
    async with running_app(settings) as pair:
        yield pair


@pytest.fixture
def timed_clock(timed: tuple[FastAPI, httpx.AsyncClient]) -> Clock:
    return Clock(timed[0])


async def latest(api: httpx.AsyncClient, deployment: dict[str, Any]) -> dict[str, Any]:
    current = (await api.get(f"/v2/deployments/{deployment['id']}")).json()
    path = f"/v2/deployments/{deployment['id']}/revisions/{current['latest_revision_id']}"
    revision: dict[str, Any] = (await api.get(path)).json()
    return revision


async def revisions(api: httpx.AsyncClient, deployment: dict[str, Any]) -> list[dict[str, Any]]:
    """Newest first."""
    page = await api.get(f"/v2/deployments/{deployment['id']}/revisions")
    found: list[dict[str, Any]] = page.json()["resources"]
    return found


async def fix(api: httpx.AsyncClient, deployment: dict[str, Any]) -> dict[str, Any]:
    response = await api.patch(f"/v2/deployments/{deployment['id']}", json=RESOURCES)
    assert response.status_code == 200, response.text
    patched: dict[str, Any] = response.json()
    return patched


async def settle(clock: Clock, api: httpx.AsyncClient, deployment: dict[str, Any]) -> str:
    """Steps until the latest revision is terminal; its status."""
    for _ in range(12):
        status: str = (await latest(api, deployment))["status"]
        if status in ("DEPLOYED", "BUILD_FAILED", "DEPLOY_FAILED", "CREATE_FAILED"):
            return status
        await clock.step()
    raise AssertionError("the revision never settled")


GIT_PATH = ["CREATING", "QUEUED", "AWAITING_BUILD", "BUILDING", "AWAITING_DEPLOY", "DEPLOYING"]


@pytest.mark.parametrize("steps", range(len(GIT_PATH)), ids=GIT_PATH)
async def test_a_revision_on_its_way_deploys_with_the_change(
    timed: tuple[FastAPI, httpx.AsyncClient], timed_clock: Clock, steps: int
) -> None:
    api = timed[1]
    created = (await api.post("/v2/deployments", json=git_body())).json()
    await timed_clock.step(steps)
    assert (await latest(api, created))["status"] == GIT_PATH[steps]
    patched = await fix(api, created)
    assert patched["latest_revision_id"] == created["latest_revision_id"]  # no new revision
    spec = patched["source_config"]["resource_spec"]
    assert (spec["min_scale"], spec["max_scale"]) == (1, 3)
    assert await settle(timed_clock, api, created) == "DEPLOYED"
    assert len(await revisions(api, created)) == 1


@pytest.mark.parametrize(
    ("name", "failed"),
    [
        ("build-fails", "BUILD_FAILED"),
        ("deploy-fails", "DEPLOY_FAILED"),
        ("create-fails", "CREATE_FAILED"),
    ],
)
@pytest.mark.parametrize("source", ["git_host", "external_docker"])
async def test_a_change_after_a_revision_failed_retries_it_with_the_change(
    timed: tuple[FastAPI, httpx.AsyncClient],
    timed_clock: Clock,
    name: str,
    failed: str,
    source: str,
) -> None:
    api = timed[1]
    body = git_body(name) if source == "git_host" else image_body(name)
    created = (await api.post("/v2/deployments", json=body)).json()
    assert await settle(timed_clock, api, created) == failed
    first = await latest(api, created)

    patched = await fix(api, created)

    assert patched["latest_revision_id"] != created["latest_revision_id"]
    retry = await latest(api, created)
    config, before = retry["source_revision_config"], first["source_revision_config"]
    assert config == before  # the same image, or the same ref, graph and built commit
    assert await settle(timed_clock, api, created) == "DEPLOYED"
    deployment = (await api.get(f"/v2/deployments/{created['id']}")).json()
    assert deployment["status"] == "READY"
    assert deployment["active_revision_id"] == retry["id"]
    assert [r["status"] for r in await revisions(api, created)] == ["DEPLOYED", failed]


@pytest.mark.parametrize(
    "body",
    [
        {"source_config": {"resource_spec": {"min_scale": 1}}},  # what it has
        {"source_config": {"custom_url": "https://agent.example"}},  # nothing rendered
    ],
    ids=["same-resources", "not-rendered"],
)
async def test_a_patch_of_a_failed_deployment_that_changes_nothing_rendered_retries_nothing(
    timed: tuple[FastAPI, httpx.AsyncClient], timed_clock: Clock, body: dict[str, Any]
) -> None:
    api = timed[1]
    created = (await api.post("/v2/deployments", json=image_body("deploy-fails"))).json()
    assert await settle(timed_clock, api, created) == "DEPLOY_FAILED"
    response = await api.patch(f"/v2/deployments/{created['id']}", json=body)
    assert response.status_code == 200, response.text
    assert response.json()["latest_revision_id"] == created["latest_revision_id"]
    assert len(await revisions(api, created)) == 1


def server_hpa(world: World) -> dict[str, Any]:
    (found,) = [
        obj
        for obj in world.cluster.of_kind("HorizontalPodAutoscaler")
        if obj["metadata"]["labels"][LABEL_COMPONENT] == SERVER
    ]
    return found


BAD_BOUNDS = {"source_config": {"resource_spec": {"min_scale": 5, "max_scale": 3}}}


async def test_a_rollout_the_data_plane_refused_is_retried_once_the_resources_are_fixed(
    world: World,
) -> None:
    """The agent's render refuses the bounds (DEPLOY_FAILED, with the reason); the fix is
    a PATCH of resource_spec alone, which retries the revision; the agent deploys it."""
    deployment = await world.deploy(image_body() | BAD_BOUNDS)
    await world.agent.round()
    assert await world.revision_status(deployment) == "DEPLOY_FAILED"

    patched = await fix(world.api, deployment)

    assert patched["latest_revision_id"] != deployment["latest_revision_id"]
    await world.clock.step(2, beating=world.listener_id)  # CREATING -> AWAITING_DEPLOY
    await world.agent.round()
    world.cluster.roll_out()
    await world.agent.round()
    assert await world.revision_status(deployment) == "DEPLOYED"
    assert (server_hpa(world)["spec"]["minReplicas"], server_hpa(world)["spec"]["maxReplicas"]) == (
        1,
        3,
    )
    (server,) = [
        d
        for d in world.cluster.of_kind("Deployment")
        if d["metadata"]["name"].endswith(deployment["id"][:8])
    ]
    assert (
        server["spec"]["template"]["spec"]["containers"][0]["image"]
        == (image_body()["source_revision_config"]["image_uri"])
    )


async def test_a_failure_of_a_render_the_deployment_changed_since_is_not_reported(
    world: World,
) -> None:
    """The agent rendered the bad bounds, and the fix landed before its report: failing
    the revision would leave the fix, made while the revision was on its way, never run.
    The next round renders the fix instead."""
    deployment = await world.deploy(image_body() | BAD_BOUNDS)
    client = world.client
    original = client.get_deployment

    async def fixed_meanwhile(deployment_id: Any) -> Any:
        await fix(world.api, deployment)
        return await original(deployment_id)

    client.get_deployment = fixed_meanwhile  # type: ignore[method-assign]
    try:
        await world.agent.round()
    finally:
        client.get_deployment = original  # type: ignore[method-assign]
    assert await world.revision_status(deployment) == "AWAITING_DEPLOY"  # nothing reported
    await world.agent.round()
    world.cluster.roll_out()
    await world.agent.round()
    assert await world.revision_status(deployment) == "DEPLOYED"
    assert server_hpa(world)["spec"]["maxReplicas"] == 3
    assert len(await revisions(world.api, deployment)) == 1
