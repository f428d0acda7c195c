"""The listener agent against the emulator app in-process and an in-memory cluster.

Each test drives the agent round by round (`Agent.round`), the pipeline by a manual
clock, and the cluster's controllers by hand (`FakeCluster.roll_out`), so every step
of the protocol is observed without waiting on real time.
"""
# ruff: noqa: F811  (pytest fixtures imported from the harness are parameters here)

from __future__ import annotations

import uuid

import pytest
from tests.support.agent_world import (  # noqa: F401
    World,
    clock,
    dp_client,
    make_deployment,
    make_listener,
    world,
)
from tests.support.emulator_app import KEY_A, api, emulator, image_body  # noqa: F401
from tests.support.fakecluster import AgentKilled

from deployplane.dataplane.applier import OWNER_MARKER
from deployplane.dataplane.render import LABEL_DEPLOYMENT_ID, LABEL_LISTENER_ID


async def test_a_revision_is_applied_rolled_out_and_reported_deployed(world: World) -> None:
    deployment = await world.deploy()
    await world.agent.round()
    assert await world.revision_status(deployment) == "DEPLOYING"
    server = world.cluster.of_kind("Deployment")[0]
    assert server["spec"]["template"]["spec"]["containers"][0]["image"] == (
        "registry.example.com/app:1"
    )
    (owner,) = world.cluster.of_kind("ConfigMap")
    assert owner["data"][OWNER_MARKER] == deployment["latest_revision_id"]
    for obj in world.cluster.objects.values():
        if obj is not owner:
            assert obj["metadata"]["ownerReferences"][0]["uid"] == owner["metadata"]["uid"]
    # Secret values reach the cluster through the Secret the deployment owns.
    assert any("OPENAI_API_KEY" in s.get("data", {}) for s in world.cluster.of_kind("Secret"))

    await world.agent.round()  # not rolled out yet: still DEPLOYING
    assert await world.revision_status(deployment) == "DEPLOYING"
    world.cluster.roll_out(ready_database=False)
    await world.agent.round()
    assert await world.revision_status(deployment) == "DEPLOYED"
    assert (await world.deployment(deployment))["status"] == "AWAITING_DATABASE"
    world.cluster.roll_out(ready_database=True)
    await world.agent.round()
    state = await world.deployment(deployment)
    assert state["status"] == "READY"
    assert state["active_revision_id"] == deployment["latest_revision_id"]


async def test_steady_state_writes_nothing(world: World) -> None:
    deployment = await world.deploy()
    await world.agent.round()
    world.cluster.roll_out()
    await world.agent.round()
    assert (await world.deployment(deployment))["status"] == "READY"
    writes = world.cluster.writes
    for _ in range(3):
        await world.agent.round()
        await world.agent.round(full=True)
    assert world.cluster.writes == writes


async def test_image_update_rolls_out_the_new_revision(world: World) -> None:
    deployment = await world.deploy()
    await world.agent.round()
    world.cluster.roll_out()
    await world.agent.round()
    patch = {"source_revision_config": {"image_uri": "registry.example.com/app:2"}}
    assert (await world.api.patch(f"/v2/deployments/{deployment['id']}", json=patch)).is_success
    await world.clock.step(2, beating=world.listener_id)
    await world.agent.round()
    assert await world.revision_status(deployment) == "DEPLOYING"
    (server,) = world.cluster.of_kind("Deployment")[:1]
    assert server["spec"]["template"]["spec"]["containers"][0]["image"].endswith(":2")
    assert server["metadata"]["generation"] == 2
    world.cluster.roll_out()
    await world.agent.round()
    assert await world.revision_status(deployment) == "DEPLOYED"
    assert (await world.deployment(deployment))["image_version"] == "registry.example.com/app:2"


async def test_an_image_that_cannot_be_pulled_fails_the_revision_with_the_reason(
    world: World,
) -> None:
    deployment = await world.deploy()
    await world.agent.round()
    server = world.cluster.of_kind("Deployment")[0]
    world.cluster.add_pod(server, waiting_reason="ImagePullBackOff")
    await world.agent.round()
    assert await world.revision_status(deployment) == "DEPLOY_FAILED"
    work = await world.client.revision_work(
        world.listener_id, deployment["id"], deployment["latest_revision_id"]
    )
    assert work.message == "ImagePullBackOff: registry.example.com/app:1 cannot be pulled"
    # the agent ships what it saw as deploy log lines (langgraph deploy logs reads them)
    logs = await world.api.post(
        f"/v1/projects/{deployment['id']}/revisions/{deployment['latest_revision_id']}/deploy_logs",
        json={"order": "asc", "level": "ERROR"},
    )
    assert [line["message"] for line in logs.json()["logs"]] == [
        "rollout DEPLOY_FAILED: ImagePullBackOff: registry.example.com/app:1 cannot be pulled"
    ]
    every = await world.api.post(f"/v1/projects/{deployment['id']}/deploy_logs", json={})
    assert any(
        "0/1 ready (waiting: ImagePullBackOff)" in line["message"] for line in every.json()["logs"]
    )


async def test_deployed_waits_for_the_queue_and_redis_too(world: World) -> None:
    deployment = await world.deploy()
    await world.agent.round()
    world.cluster.roll_out()
    for other in world.cluster.of_kind("Deployment"):  # all but the server roll back
        if other["metadata"]["labels"]["app.kubernetes.io/component"] != "agent-server":
            other["status"] = {"observedGeneration": 1, "replicas": 1, "updatedReplicas": 1}
    await world.agent.round()
    assert await world.revision_status(deployment) == "DEPLOYING"
    world.cluster.roll_out()
    await world.agent.round()
    assert await world.revision_status(deployment) == "DEPLOYED"


async def test_a_server_crashing_at_start_fails_with_its_last_log_lines(world: World) -> None:
    deployment = await world.deploy()
    await world.agent.round()
    server = world.cluster.of_kind("Deployment")[0]
    # the vendor's server may restart while its database starts: 3 restarts first
    world.cluster.add_pod(server, waiting_reason="CrashLoopBackOff", restarts=2)
    pod = f"{server['metadata']['name']}-pod"
    world.cluster.logs[(pod, "agent-server")] = "\n".join(
        [
            *(f"line {n}" for n in range(40)),
            "\x1b[2m2026-11-27T04:01:57Z\x1b[0m [\x1b[31m\x1b[1merror    \x1b[0m] startup failed",
            "ImportError: No module named 'agent'",
        ]
    )
    await world.agent.round()
    assert await world.revision_status(deployment) == "DEPLOYING"
    world.cluster.add_pod(server, waiting_reason="CrashLoopBackOff", restarts=3)
    await world.agent.round()
    assert await world.revision_status(deployment) == "DEPLOY_FAILED"
    revision = deployment["latest_revision_id"]
    logs = await world.api.post(
        f"/v1/projects/{deployment['id']}/revisions/{revision}/deploy_logs",
        json={"order": "asc"},
    )
    messages = [line["message"] for line in logs.json()["logs"]]
    failed = (
        "CrashLoopBackOff: container agent-server crashed at start 3 times (exit code 1, Error)"
    )
    assert f"rollout DEPLOY_FAILED: {failed}" in messages
    # the server's own last words close the deploy log, as `langgraph deploy` prints it
    assert messages[-1] == "agent-server log: ImportError: No module named 'agent'"
    # the server's terminal colours are gone: a deploy log line is plain text
    assert "agent-server log: 2026-11-27T04:01:57Z [error    ] startup failed" in messages
    assert "agent-server log: line 12" in messages
    assert "agent-server log: line 11" not in messages


async def test_a_namespace_the_listener_does_not_have_fails_with_that_message(
    world: World,
) -> None:
    body = image_body()
    body["source_config"] = {"listener_config": {"k8s_namespace": "elsewhere"}}
    deployment = await world.deploy(body)
    await world.agent.round()
    assert await world.revision_status(deployment) == "DEPLOY_FAILED"
    work = await world.client.revision_work(
        world.listener_id, deployment["id"], deployment["latest_revision_id"]
    )
    assert work.message is not None
    assert "namespace elsewhere is not one of" in work.message
    assert world.cluster.writes == 0


async def test_delete_removes_every_object_then_the_record(world: World) -> None:
    deployment = await world.deploy()
    await world.agent.round()
    world.cluster.roll_out()
    await world.agent.round()
    assert (await world.api.delete(f"/v2/deployments/{deployment['id']}")).is_success
    await world.clock.step(3, beating=world.listener_id)  # the record waits for the agent
    await world.agent.round()
    assert world.cluster.objects == {}
    assert (await world.api.get(f"/v2/deployments/{deployment['id']}")).status_code == 200
    await world.agent.round()
    assert (await world.api.get(f"/v2/deployments/{deployment['id']}")).status_code == 404


async def test_an_agent_killed_mid_apply_is_finished_by_the_next_one(world: World) -> None:
    deployment = await world.deploy()
    world.cluster.fail_on_apply = 4  # the owner and two objects are in, then SIGKILL
    with pytest.raises(AgentKilled):
        await world.agent.round()
    (owner,) = world.cluster.of_kind("ConfigMap")
    assert OWNER_MARKER not in owner["data"]  # not marked applied
    restarted = world.new_agent()
    await restarted.round()
    (owner_after,) = world.cluster.of_kind("ConfigMap")
    assert owner_after["metadata"]["uid"] == owner["metadata"]["uid"]
    assert owner_after["data"][OWNER_MARKER] == deployment["latest_revision_id"]
    assert len(world.cluster.of_kind("Deployment")) >= 1
    world.cluster.roll_out()
    await restarted.round()
    assert await world.revision_status(deployment) == "DEPLOYED"


async def test_a_full_round_removes_objects_of_deployments_deleted_meanwhile(
    world: World,
) -> None:
    kept = await world.deploy(image_body("kept"))
    await world.agent.round()
    orphan_uid = str(uuid.uuid4())
    world.cluster.objects[("ConfigMap", "agents", "gone-1234")] = {
        "kind": "ConfigMap",
        "metadata": {
            "name": "gone-1234",
            "namespace": "agents",
            "uid": orphan_uid,
            "labels": {LABEL_LISTENER_ID: world.listener_id, LABEL_DEPLOYMENT_ID: "gone"},
        },
    }
    await world.agent.round(full=True)
    assert ("ConfigMap", "agents", "gone-1234") not in world.cluster.objects
    owners = [
        o["metadata"]["labels"][LABEL_DEPLOYMENT_ID] for o in world.cluster.of_kind("ConfigMap")
    ]
    assert owners == [kept["id"]]


async def test_deployments_of_other_listeners_are_left_alone(world: World) -> None:
    other = await make_listener(world.api, "cluster-2")
    theirs = await make_deployment(world.api, other, image_body("theirs"))
    await world.clock.step(2)
    await world.agent.round(full=True)
    assert world.cluster.objects == {}
    assert await world.revision_status(theirs) != "DEPLOYING"


async def test_a_full_round_applies_a_deployed_revision_whose_objects_are_missing(
    world: World,
) -> None:
    # Deployed on the emulator's timers while no agent was alive (no heartbeats here).
    deployment = await make_deployment(world.api, world.listener_id, image_body("early"))
    await world.clock.step(10)
    assert await world.revision_status(deployment) == "DEPLOYED"
    await world.agent.round()  # a normal round: reconciled already, nothing to do
    assert world.cluster.objects == {}
    await world.agent.round(full=True)
    (owner,) = world.cluster.of_kind("ConfigMap")
    assert owner["data"][OWNER_MARKER] == deployment["latest_revision_id"]
    assert len(world.cluster.of_kind("Deployment")) >= 1
    writes = world.cluster.writes
    await world.agent.round(full=True)  # all there now: one read, no write
    assert world.cluster.writes == writes
    # Objects deleted by hand come back on the next full round.
    world.cluster.objects.pop(next(k for k in world.cluster.objects if k[0] == "ConfigMap"))
    await world.agent.round(full=True)
    assert len(world.cluster.of_kind("ConfigMap")) == 1
    assert await world.revision_status(deployment) == "DEPLOYED"


async def test_a_newer_revision_supersedes_the_rollout_in_progress(world: World) -> None:
    deployment = await world.deploy()
    await world.agent.round()
    assert await world.revision_status(deployment) == "DEPLOYING"  # not rolled out yet
    patch = {"source_revision_config": {"image_uri": "registry.example.com/app:2"}}
    assert (await world.api.patch(f"/v2/deployments/{deployment['id']}", json=patch)).is_success
    first = deployment["latest_revision_id"]
    old = await world.api.get(f"/v2/deployments/{deployment['id']}/revisions/{first}")
    assert old.json()["status"] == "INTERRUPTED"
    await world.clock.step(2, beating=world.listener_id)
    await world.agent.round()
    (server,) = world.cluster.of_kind("Deployment")[:1]
    assert server["spec"]["template"]["spec"]["containers"][0]["image"].endswith(":2")
    world.cluster.roll_out()
    await world.agent.round()
    assert await world.revision_status(deployment) == "DEPLOYED"
    old = await world.api.get(f"/v2/deployments/{deployment['id']}/revisions/{first}")
    assert old.json()["status"] == "INTERRUPTED"  # never reported DEPLOYED afterwards
