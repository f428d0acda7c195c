"""The agent with the vendor data plane's options (docs/dataplane.md, "Settings"):
KEDA, Ingress / HTTPRoute routing, against the emulator in-process and the in-memory
cluster (whose `roll_out` also admits routes, as an ingress or Gateway controller
would: tests/support/routecontroller.py)."""
# ruff: noqa: F811  (pytest fixtures imported from the harness are parameters here)

from __future__ import annotations

import dataclasses
import uuid
from typing import Any

import httpx
import pytest
from tests.support.agent_world import Clock, World, clock, dp_client  # noqa: F401
from tests.support.emulator_app import KEY_A, api, emulator, image_body  # noqa: F401

from deployplane.dataplane.agent import Agent, AgentSettings
from deployplane.dataplane.protocol import DataPlaneClient
from deployplane.dataplane.render import Autoscaler, DataPlaneSettings, Routing

INGRESS = DataPlaneSettings(routing=Routing.INGRESS, host="agents.example.com", base_path="/lg")
GATEWAY = DataPlaneSettings(
    routing=Routing.GATEWAY,
    host="agents.example.com",
    gateway_name="public",
    gateway_namespace="infra",
    autoscaler=Autoscaler.KEDA,
)


class Vendor(World):
    settings = DataPlaneSettings()

    def new_agent(self) -> Agent:
        return Agent(
            client=self.client,
            cluster=self.cluster,
            listener_id=uuid.UUID(self.listener_id),
            settings=AgentSettings(dataplane=self.settings),
        )

    def with_settings(self, settings: DataPlaneSettings) -> Vendor:
        """The agent restarted with other settings (a chart upgrade)."""
        self.settings = settings
        self.agent = self.new_agent()
        return self


async def world_with(
    api: httpx.AsyncClient, clock: Clock, client: DataPlaneClient, settings: DataPlaneSettings
) -> Vendor:
    world = Vendor(api, clock, client)
    world.settings = settings
    await world.start()
    return world


def queue_scaled(body: dict[str, Any] | None = None) -> dict[str, Any]:
    body = body or image_body()
    config = body.setdefault("source_config", {})
    config["resource_spec"] = {"queue_min_scale": 1, "queue_max_scale": 5}
    return body


async def test_keda_and_gateway_deploy_once_the_route_is_admitted_and_report_its_url(
    api: httpx.AsyncClient, clock: Clock, dp_client: DataPlaneClient
) -> None:
    world = await world_with(api, clock, dp_client, GATEWAY)
    deployment = await world.deploy(queue_scaled())
    await world.agent.round()
    kinds = {obj["kind"] for obj in world.cluster.objects.values()}
    assert {"ScaledObject", "TriggerAuthentication", "HTTPRoute", "NetworkPolicy"} <= kinds
    world.cluster.roll_out(admit_routes=False)
    await world.agent.round()
    # Rolled out, but the Gateway has not accepted the route: not DEPLOYED yet.
    assert await world.revision_status(deployment) == "DEPLOYING"
    world.cluster.roll_out()
    await world.agent.round()
    assert await world.revision_status(deployment) == "DEPLOYED"
    state = await world.deployment(deployment)
    assert state["source_config"]["custom_url"] == (
        f"https://agents.example.com/{deployment['id']}"
    )
    writes = world.cluster.writes
    await world.agent.round(full=True)
    await world.agent.round()
    assert world.cluster.writes == writes  # steady: nothing written


async def test_keda_without_its_crds_fails_the_revision_saying_so(
    api: httpx.AsyncClient, clock: Clock, dp_client: DataPlaneClient
) -> None:
    world = await world_with(api, clock, dp_client, GATEWAY)
    world.cluster.unserved = {"ScaledObject", "TriggerAuthentication"}
    deployment = await world.deploy(queue_scaled())
    await world.agent.round()
    assert await world.revision_status(deployment) == "DEPLOY_FAILED"
    work = await dp_client.revision_work(
        world.listener_id, deployment["id"], deployment["latest_revision_id"]
    )
    assert work.message is not None
    assert "does not serve ScaledObject (keda.sh/v1alpha1)" in work.message
    assert "install KEDA" in work.message
    assert world.cluster.objects == {}  # nothing half-written


async def test_a_base_path_change_rewrites_every_route_and_nothing_else(
    api: httpx.AsyncClient, clock: Clock, dp_client: DataPlaneClient
) -> None:
    """The route of each deployment applied again, and its owner's record of what is
    applied (its digests): no other object is written."""
    world = await world_with(api, clock, dp_client, INGRESS)
    deployments = [await world.deploy(image_body(f"d{i}")) for i in range(3)]
    await world.agent.round()
    world.cluster.roll_out()
    await world.agent.round()
    for deployment in deployments:
        assert await world.revision_status(deployment) == "DEPLOYED"
    before = {key: obj for key, obj in world.cluster.objects.items()}
    writes = world.cluster.writes

    world.with_settings(dataclasses.replace(INGRESS, base_path="/agents"))
    await world.agent.round(full=True)  # a restarted agent's first round is a full one
    changed = [key for key, obj in world.cluster.objects.items() if obj != before[key]]
    assert sorted(k[0] for k in changed) == ["ConfigMap"] * 3 + ["Ingress"] * 3
    assert world.cluster.writes == writes + 6
    for key in changed:
        if key[0] == "ConfigMap":  # the owner: only its record of the render changed
            unchanged = ("render-digest", "object-digests")
            assert _without(world.cluster.objects[key], unchanged) == _without(
                before[key], unchanged
            )
    for deployment in deployments:
        state = await world.deployment(deployment)
        url = f"https://agents.example.com/agents/{deployment['id']}"
        assert state["source_config"]["custom_url"] == url
        (ingress,) = [
            o
            for o in world.cluster.of_kind("Ingress")
            if o["metadata"]["labels"]["deployplane.io/deployment-id"] == deployment["id"]
        ]
        assert ingress["spec"]["rules"][0]["http"]["paths"][0]["path"] == (
            f"/agents/{deployment['id']}"
        )
    await world.agent.round(full=True)
    assert world.cluster.writes == writes + 6  # and then nothing more


def _without(owner: dict[str, Any], keys: tuple[str, ...]) -> dict[str, Any]:
    data = {k: v for k, v in owner["data"].items() if k not in keys}
    return {**owner, "data": data}


@pytest.mark.parametrize("settings", [INGRESS, GATEWAY])
async def test_the_url_route_is_scoped_to_the_listener(
    api: httpx.AsyncClient, clock: Clock, dp_client: DataPlaneClient, settings: DataPlaneSettings
) -> None:
    world = await world_with(api, clock, dp_client, settings)
    deployment = await world.deploy()
    other = str(uuid.uuid4())
    response = await api.put(
        f"/_dataplane/v1/listeners/{world.listener_id}/deployments/{other}/url",
        json={"url": "https://x.example.com"},
    )
    assert response.status_code == 404
    for bad in ("not a url", "https://", "https://a.example/x y", "https://a.example/\nx"):
        response = await api.put(
            f"/_dataplane/v1/listeners/{world.listener_id}/deployments/{deployment['id']}/url",
            json={"url": bad},
        )
        assert response.status_code == 422, bad
        assert response.json()["detail"][0]["loc"] == ["body", "url"]
