"""A change that makes no revision reaches the workloads (issue 35, item 1).

A PATCH of what the data plane renders from (`source_config.resource_spec`,
`listener_config`, `listener_id`) makes no revision (the spec: only a non-null repo_ref,
graph_config_path or image_uri does); the running revision becomes
`remote_reconciled=false` instead, which the published filters show, the agent renders
it again, applies what changed, and its report makes it reconciled again. Driven round
by round against the emulator in-process and an in-memory cluster, as
test_dataplane_agent.py. And a render that changed with the agent (a new release, other
settings) reaches the running revision on the new agent's first full round, with no
write to the control plane.
"""
# ruff: noqa: F811  (pytest fixtures imported from the harness are parameters here)

from __future__ import annotations

import uuid
from typing import Any

import httpx
from tests.support.agent_world import Clock, World, clock, dp_client, world  # noqa: F401
from tests.support.emulator_app import KEY_A, api, emulator, image_body  # noqa: F401

from deployplane.dataplane.agent import Agent, AgentSettings
from deployplane.dataplane.protocol import DataPlaneClient
from deployplane.dataplane.render import SERVER, Autoscaler, DataPlaneSettings
from deployplane.dataplane.render.context import LABEL_COMPONENT, QUEUE
from deployplane.emulator.revisions.stages import RERENDERED


async def unreconciled(api: httpx.AsyncClient, deployment: dict[str, Any]) -> bool:
    """Whether the published filters list the deployment (and its latest revision) as
    not reconciled; the two must agree."""
    listed = await api.get(
        "/v2/deployments",
        params={"deployment_ids": deployment["id"], "remote_reconciled": "false"},
    )
    revisions = await api.get(
        f"/v2/deployments/{deployment['id']}/revisions", params={"remote_reconciled": "false"}
    )
    in_list = [d["id"] for d in listed.json()["resources"]] == [deployment["id"]]
    latest = deployment["latest_revision_id"]
    in_revisions = latest in [r["id"] for r in revisions.json()["resources"]]
    assert in_list == in_revisions, (listed.json(), revisions.json())
    return in_list


async def ready(world: World, body: dict[str, Any] | None = None) -> dict[str, Any]:
    deployment = await world.deploy(body)
    await world.agent.round()
    world.cluster.roll_out()
    await world.agent.round()
    state = await world.deployment(deployment)
    assert state["status"] == "READY"
    assert not await unreconciled(world.api, deployment)
    return state


async def patch(world: World, deployment: dict[str, Any], body: dict[str, Any]) -> dict[str, Any]:
    response = await world.api.patch(f"/v2/deployments/{deployment['id']}", json=body)
    assert response.status_code == 200, response.text
    patched: dict[str, Any] = response.json()
    return patched


def hpa(world: World, component: str) -> dict[str, Any]:
    (found,) = [
        obj
        for obj in world.cluster.of_kind("HorizontalPodAutoscaler")
        if obj["metadata"]["labels"][LABEL_COMPONENT] == component
    ]
    return found


def resource_spec(**values: Any) -> dict[str, Any]:
    return {"source_config": {"resource_spec": values}}


async def test_a_resource_change_is_rendered_applied_and_reported(world: World) -> None:
    deployment = await ready(world, image_body() | resource_spec(min_scale=1, max_scale=2))
    assert hpa(world, SERVER)["spec"]["maxReplicas"] == 2
    patched = await patch(world, deployment, resource_spec(min_scale=1, max_scale=5))
    assert patched["latest_revision_id"] == deployment["latest_revision_id"]  # no revision
    assert await unreconciled(world.api, deployment)
    revision = f"/v2/deployments/{deployment['id']}/revisions/{deployment['latest_revision_id']}"
    assert (await world.api.get(revision)).json()["status"] == "DEPLOYED"

    await world.agent.round()
    assert hpa(world, SERVER)["spec"]["maxReplicas"] == 5
    # The HPA alone changed: nothing restarts, so the rollout is done and reported.
    assert not await unreconciled(world.api, deployment)
    state = await world.deployment(deployment)
    assert state["status"] == "READY"
    assert state["active_revision_id"] == deployment["latest_revision_id"]
    writes = world.cluster.writes
    await world.agent.round()
    await world.agent.round(full=True)
    assert world.cluster.writes == writes  # reconciled: steady again


async def test_a_change_that_restarts_pods_is_reported_once_rolled_out(world: World) -> None:
    deployment = await ready(world)
    await patch(world, deployment, resource_spec(min_scale=1, cpu=2))
    await world.agent.round()
    server = world.cluster.of_kind("Deployment")[0]
    assert server["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"]["cpu"]
    assert server["metadata"]["generation"] == 2
    assert await unreconciled(world.api, deployment)  # the new pods are not there yet
    world.cluster.roll_out()
    await world.agent.round()
    assert not await unreconciled(world.api, deployment)


async def test_a_patch_that_changes_nothing_rendered_asks_for_no_rerender(world: World) -> None:
    deployment = await ready(world, image_body() | resource_spec(min_scale=1, max_scale=2))
    # The same values again, an explicit null where there was nothing, a field the
    # data plane does not render: none of them changes what runs.
    await patch(world, deployment, resource_spec(min_scale=1, max_scale=2, cpu=None))
    assert not await unreconciled(world.api, deployment)
    await patch(world, deployment, {"source_config": {"custom_url": "https://agent.example.com"}})
    assert not await unreconciled(world.api, deployment)


async def test_the_rerender_of_an_unchanged_revision_writes_nothing(world: World) -> None:
    deployment = await ready(world)
    # The namespace the deployment already runs in, now named: a rendered field that
    # changed, so the deployment is not reconciled, but the objects render the same.
    await patch(
        world, deployment, {"source_config": {"listener_config": {"k8s_namespace": "agents"}}}
    )
    assert await unreconciled(world.api, deployment)
    before = {key: dict(obj) for key, obj in world.cluster.objects.items()}
    writes = world.cluster.writes
    await world.agent.round()
    assert world.cluster.writes == writes  # not one apply: the owner's digest is the same
    assert world.cluster.objects == before
    assert not await unreconciled(world.api, deployment)  # reported all the same


async def test_a_secret_change_makes_a_revision_that_is_not_reconciled(world: World) -> None:
    deployment = await ready(world)
    secrets = {"secrets": [{"name": "OPENAI_API_KEY", "value": "sk-another-value"}]}
    patched = await patch(world, deployment, secrets)
    assert patched["latest_revision_id"] != deployment["latest_revision_id"]
    assert await unreconciled(world.api, patched)
    await world.clock.step(2, beating=world.listener_id)
    await world.agent.round()
    world.cluster.roll_out()
    await world.agent.round()
    assert not await unreconciled(world.api, patched)


async def test_a_change_during_the_rerender_is_not_lost(world: World) -> None:
    """A PATCH between the agent's listing and its report: the report is held back, so
    the deployment stays not reconciled and the next round applies the newer change."""
    deployment = await ready(world, image_body() | resource_spec(min_scale=1, max_scale=2))
    await patch(world, deployment, resource_spec(min_scale=1, max_scale=3))
    client = world.client
    original = client.get_deployment

    async def patched_meanwhile(deployment_id: Any) -> Any:
        await patch(world, deployment, resource_spec(min_scale=1, max_scale=4))
        return await original(deployment_id)

    client.get_deployment = patched_meanwhile  # type: ignore[method-assign]
    try:
        await world.agent.round()
    finally:
        client.get_deployment = original  # type: ignore[method-assign]
    assert hpa(world, SERVER)["spec"]["maxReplicas"] == 3
    assert await unreconciled(world.api, deployment)
    await world.agent.round()
    assert hpa(world, SERVER)["spec"]["maxReplicas"] == 4
    assert not await unreconciled(world.api, deployment)


async def test_queue_max_scale_with_keda_makes_the_scaled_object(world: World) -> None:
    world.agent = Agent(
        client=world.client,
        cluster=world.cluster,
        listener_id=uuid.UUID(world.listener_id),
        settings=AgentSettings(dataplane=DataPlaneSettings(autoscaler=Autoscaler.KEDA)),
    )
    deployment = await ready(world)
    assert world.cluster.of_kind("ScaledObject") == []
    await patch(world, deployment, resource_spec(min_scale=1, queue_min_scale=1, queue_max_scale=3))
    await world.agent.round()
    (scaled,) = world.cluster.of_kind("ScaledObject")
    assert scaled["spec"]["maxReplicaCount"] == 3
    assert scaled["spec"]["scaleTargetRef"]["name"].endswith("-" + QUEUE)
    assert not await unreconciled(world.api, deployment)


async def test_a_change_during_a_rollout_reaches_the_objects_already_applied(
    world: World,
) -> None:
    """The revision is applied but not yet rolled out when the resources change: the
    owner's render digest differs from the new render, so the agent applies again."""
    deployment = await world.deploy(image_body() | resource_spec(min_scale=1, max_scale=2))
    await world.agent.round()
    assert await world.revision_status(deployment) == "DEPLOYING"
    await patch(world, deployment, resource_spec(min_scale=1, max_scale=6))
    await world.agent.round()
    assert hpa(world, SERVER)["spec"]["maxReplicas"] == 6
    world.cluster.roll_out()
    await world.agent.round()
    assert await world.revision_status(deployment) == "DEPLOYED"
    assert not await unreconciled(world.api, deployment)


async def test_without_an_agent_the_simulated_data_plane_rerenders_a_step_later(
    api: httpx.AsyncClient, clock: Clock
) -> None:
    created = (await api.post("/v2/deployments", json=image_body())).json()
    await clock.step(4)
    assert (await api.get(f"/v2/deployments/{created['id']}")).json()["status"] == "READY"
    await api.patch(f"/v2/deployments/{created['id']}", json=resource_spec(max_scale=4))
    assert await unreconciled(api, created)
    await clock.step()
    assert not await unreconciled(api, created)
    revision = f"/v2/deployments/{created['id']}/revisions/{created['latest_revision_id']}"
    assert (await api.get(revision)).json()["status"] == "DEPLOYED"
    logs = await api.post(
        f"/v1/projects/{created['id']}/revisions/{created['latest_revision_id']}/deploy_logs",
        json={"limit": 10},
    )
    assert RERENDERED in [line["message"] for line in logs.json()["logs"]]


async def test_a_newer_revision_ends_the_wait_of_a_rerender_and_keeps_it_deployed(
    api: httpx.AsyncClient, clock: Clock
) -> None:
    created = (await api.post("/v2/deployments", json=image_body())).json()
    await clock.step(4)
    await api.patch(f"/v2/deployments/{created['id']}", json=resource_spec(max_scale=4))
    image = {"source_revision_config": {"image_uri": "registry.example.com/app:2"}}
    newer = (await api.patch(f"/v2/deployments/{created['id']}", json=image)).json()
    revision = f"/v2/deployments/{created['id']}/revisions/{created['latest_revision_id']}"
    old = (await api.get(revision)).json()
    assert old["status"] == "DEPLOYED"  # not INTERRUPTED: it still runs
    waiting = await api.get(
        f"/v2/deployments/{created['id']}/revisions", params={"remote_reconciled": "false"}
    )
    assert [r["id"] for r in waiting.json()["resources"]] == [newer["latest_revision_id"]]


async def test_with_a_live_agent_only_its_report_reconciles_the_change(world: World) -> None:
    deployment = await ready(world)
    await patch(world, deployment, resource_spec(min_scale=1, max_scale=3))
    await world.clock.step(3, beating=world.listener_id)  # the timer hands it to the agent
    assert await unreconciled(world.api, deployment)
    await world.agent.round()
    assert not await unreconciled(world.api, deployment)


async def test_a_change_between_the_listing_and_the_deployed_report_is_not_lost(
    world: World,
) -> None:
    """The first rollout finishes, but the resources changed after the agent listed the
    deployment: DEPLOYED is held back (it would reconcile a render that is not the
    current one) and the next round applies the change, then reports."""
    deployment = await world.deploy(image_body() | resource_spec(min_scale=1, max_scale=2))
    await world.agent.round()
    world.cluster.roll_out()
    client = world.client
    original = client.get_deployment

    async def patched_meanwhile(deployment_id: Any) -> Any:
        await patch(world, deployment, resource_spec(min_scale=1, max_scale=7))
        return await original(deployment_id)

    client.get_deployment = patched_meanwhile  # type: ignore[method-assign]
    try:
        await world.agent.round()
    finally:
        client.get_deployment = original  # type: ignore[method-assign]
    assert await world.revision_status(deployment) == "DEPLOYING"
    await world.agent.round()
    assert hpa(world, SERVER)["spec"]["maxReplicas"] == 7
    assert await world.revision_status(deployment) == "DEPLOYED"
    assert not await unreconciled(world.api, deployment)


class CountingTransport(httpx.AsyncBaseTransport):
    """The emulator app's transport, counting the requests that would write: anything
    but a GET, the agent's heartbeat aside (it records only that the agent lives)."""

    def __init__(self, app: Any) -> None:
        self.inner = httpx.ASGITransport(app=app)
        self.writes: list[str] = []

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if request.method != "GET" and not request.url.path.endswith("/heartbeat"):
            self.writes.append(f"{request.method} {request.url.path}")
        return await self.inner.handle_async_request(request)


async def test_an_upgraded_agent_brings_its_render_to_the_running_revision(
    world: World, emulator: Any
) -> None:
    """A new agent whose render differs (here its Redis image, as a new release's render
    would) applies the running revision again on its first full round: the changed
    object only, and the owner's record of the render; no report, no control-plane
    write, no new revision; later full rounds write nothing; an agent whose render is
    the same writes nothing at all."""
    deployment = await ready(world)
    before = await world.deployment(deployment)
    counting = CountingTransport(emulator[0])
    async with DataPlaneClient("http://emulator", api_key=KEY_A, transport=counting) as client:

        def agent(redis_image: str | None = None) -> Agent:
            dataplane = DataPlaneSettings(**({"redis_image": redis_image} if redis_image else {}))
            return Agent(
                client=client,
                cluster=world.cluster,
                listener_id=uuid.UUID(world.listener_id),
                settings=AgentSettings(dataplane=dataplane),
            )

        writes = world.cluster.writes
        await agent().round(full=True)  # the same release again: nothing to bring
        assert world.cluster.writes == writes
        before_upgrade = {key: dict(obj) for key, obj in world.cluster.objects.items()}
        upgraded = agent("registry.example.com/redis:8")
        await upgraded.round(full=True)
        changed = {k for k, o in world.cluster.objects.items() if o != before_upgrade.get(k)}
        assert sorted(kind for kind, _, _ in changed) == ["ConfigMap", "Deployment"]
        assert world.cluster.writes == writes + 2
        (redis,) = [
            d
            for d in world.cluster.of_kind("Deployment")
            if d["metadata"]["name"].endswith("-redis")
        ]
        assert redis["spec"]["template"]["spec"]["containers"][0]["image"].endswith("redis:8")
        assert ("Deployment", "agents", redis["metadata"]["name"]) in changed
        writes = world.cluster.writes
        await upgraded.round(full=True)
        await upgraded.round()
        assert world.cluster.writes == writes
    assert counting.writes == []
    after = await world.deployment(deployment)
    assert after["latest_revision_id"] == before["latest_revision_id"]
    assert after["status"] == "READY"
    assert not await unreconciled(world.api, deployment)


def server_deployment(world: World) -> tuple[tuple[str, str, str], dict[str, Any]]:
    (key,) = [
        key
        for key, obj in world.cluster.objects.items()
        if key[0] == "Deployment" and obj["metadata"]["labels"][LABEL_COMPONENT] == SERVER
    ]
    return key, world.cluster.objects[key]


async def test_a_new_revision_is_deployed_at_the_count_the_autoscaler_holds(world: World) -> None:
    """The HPA has scaled the server out to 4: the next revision rolls out at 4 and is
    DEPLOYED once 4 of its pods are; the count is never set back to min_scale."""
    deployment = await ready(world, image_body() | resource_spec(min_scale=2, max_scale=6))
    key, server = server_deployment(world)
    world.cluster.scale(key[1], key[2], 4)
    image = {"source_revision_config": {"image_uri": "registry.example.com/app:2"}}
    await patch(world, deployment, image)
    await world.clock.step(2, beating=world.listener_id)
    await world.agent.round()
    _, server = server_deployment(world)
    assert server["spec"]["template"]["spec"]["containers"][0]["image"].endswith(":2")
    assert world.cluster.replica_history[key] == [2, 4]
    # The pods of the old template still run: not DEPLOYED at fewer than the 4 wanted.
    server["status"] = {
        "observedGeneration": server["metadata"]["generation"],
        "replicas": 5,
        "updatedReplicas": 2,
        "availableReplicas": 4,
    }
    await world.agent.round()
    assert await world.revision_status(deployment) == "DEPLOYING"
    world.cluster.roll_out()
    await world.agent.round()
    assert await world.revision_status(deployment) == "DEPLOYED"
    assert server_deployment(world)[1]["status"]["availableReplicas"] == 4


async def test_autoscaling_turned_off_deletes_the_hpa_and_sets_min_scale(world: World) -> None:
    deployment = await ready(world, image_body() | resource_spec(min_scale=2, max_scale=6))
    key, _ = server_deployment(world)
    world.cluster.scale(key[1], key[2], 5)
    await patch(world, deployment, resource_spec(min_scale=3, max_scale=None))
    await world.agent.round()
    assert world.cluster.of_kind("HorizontalPodAutoscaler") == []  # nothing scales it away
    assert server_deployment(world)[1]["spec"]["replicas"] == 3
    assert world.cluster.replica_history[key] == [2, 5, 3]
    world.cluster.roll_out()
    await world.agent.round()
    assert not await unreconciled(world.api, deployment)
