"""The emulator's built-in data plane (`serve --builtin-dataplane`): a listener agent
standing for a listener no listing shows runs the deployments with no listener, over
the same extension; without its heartbeat the timers run them as before."""
# ruff: noqa: F811  (pytest fixtures imported from the harness are parameters here)

from __future__ import annotations

from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from tests.support.agent_world import (  # noqa: F401
    Clock,
    clock,
    dp_client,
    make_deployment,
    make_listener,
)
from tests.support.emulator_app import KEY_B, api, emulator, image_body  # noqa: F401
from tests.support.fakecluster import FakeCluster

from deployplane.api.errors import NotFound
from deployplane.dataplane.agent import Agent
from deployplane.dataplane.protocol import DataPlaneClient
from deployplane.dataplane.render import LABEL_LISTENER_ID
from deployplane.emulator.builtindataplane import builtin_listener
from deployplane.emulator.store.agents import builtin_listener_id


class Builtin:
    def __init__(self, api: httpx.AsyncClient, clock: Clock, client: DataPlaneClient) -> None:
        self.api = api
        self.clock = clock
        self.client = client
        self.cluster = FakeCluster()
        self.listener_id = builtin_listener_id(clock.workspace.id)
        self.agent = Agent(
            client=client,
            cluster=self.cluster,
            listener_id=self.listener_id,
            builtin=builtin_listener(clock.workspace, "agents"),
        )

    async def create(self, body: dict[str, Any]) -> dict[str, Any]:
        response = await self.api.post("/v2/deployments", json=body)
        assert response.status_code == 201, response.text
        created: dict[str, Any] = response.json()
        return created

    async def status(self, deployment: dict[str, Any]) -> str:
        current = (await self.api.get(f"/v2/deployments/{deployment['id']}")).json()
        path = f"/v2/deployments/{deployment['id']}/revisions/{current['latest_revision_id']}"
        status: str = (await self.api.get(path)).json()["status"]
        return status


@pytest.fixture
async def builtin(api: httpx.AsyncClient, clock: Clock, dp_client: DataPlaneClient) -> Builtin:
    return Builtin(api, clock, dp_client)


async def test_a_deployment_with_no_listener_runs_on_the_builtin_data_plane(
    builtin: Builtin,
) -> None:
    deployment = await builtin.create(image_body())
    await builtin.client.heartbeat(builtin.listener_id)
    await builtin.clock.step(2, beating=str(builtin.listener_id))  # -> AWAITING_DEPLOY
    await builtin.agent.round()
    assert await builtin.status(deployment) == "DEPLOYING"
    server = next(
        d for d in builtin.cluster.of_kind("Deployment") if d["metadata"]["name"].startswith("img")
    )
    assert server["metadata"]["namespace"] == "agents"
    assert server["metadata"]["labels"][LABEL_LISTENER_ID] == str(builtin.listener_id)
    builtin.cluster.roll_out()
    await builtin.agent.round()
    assert await builtin.status(deployment) == "DEPLOYED"
    # the timers never moved it: many steps later it is still the agent's DEPLOYED
    await builtin.clock.step(3, beating=str(builtin.listener_id))
    assert await builtin.status(deployment) == "DEPLOYED"


async def test_a_listeners_deployment_is_not_the_builtins(builtin: Builtin) -> None:
    listener_id = await make_listener(builtin.api)
    await make_deployment(builtin.api, listener_id)
    await builtin.client.heartbeat(builtin.listener_id)
    await builtin.clock.step(2, beating=str(builtin.listener_id))
    await builtin.agent.round()
    assert builtin.cluster.objects == {}


async def test_the_builtin_listener_is_in_no_listing(builtin: Builtin) -> None:
    await builtin.client.heartbeat(builtin.listener_id)
    listed = (await builtin.api.get("/v2/listeners")).json()
    ids = [item["id"] for item in listed.get("resources", listed)]
    assert str(builtin.listener_id) not in ids
    response = await builtin.api.get(f"/v2/listeners/{builtin.listener_id}")
    assert response.status_code == 404


async def test_without_its_heartbeat_the_timers_run_listenerless_deployments(
    builtin: Builtin,
) -> None:
    deployment = await builtin.create(image_body())
    await builtin.clock.step(6)
    assert await builtin.status(deployment) == "DEPLOYED"
    assert builtin.cluster.objects == {}


async def test_another_workspaces_builtin_listener_is_not_found(
    builtin: Builtin, emulator: tuple[FastAPI, httpx.AsyncClient]
) -> None:
    transport = httpx.ASGITransport(app=emulator[0])
    async with DataPlaneClient("http://emulator", api_key=KEY_B, transport=transport) as other:
        with pytest.raises(NotFound):
            await other.heartbeat(builtin.listener_id)
        # its own workspace's builtin listener is its own
        workspace_b = next(
            w for w in emulator[0].state.settings.config.workspaces if w.name == "team-b"
        )
        beat = await other.heartbeat(builtin_listener_id(workspace_b.id))
        assert beat.listener_id == builtin_listener_id(workspace_b.id)
