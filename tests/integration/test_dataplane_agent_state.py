"""The in-memory server's state and its limits, through the agent (the emulator app
in-process, an in-memory cluster): its claim applied with it and gone with it, more
replicas asked than it can run said in a Warning Event and the deploy logs, and a
server that discarded its saved files at start said in the deploy logs.

The emulator says `inmem` for the revisions of its own remote builds; here its
`runtime_of` says so for an image deployment, which needs no upload and build.
"""
# ruff: noqa: F811  (pytest fixtures imported from the harness are parameters here)

from __future__ import annotations

from typing import Any

import pytest
from tests.support.agent_world import (  # noqa: F401
    World,
    clock,
    dp_client,
    world,
)
from tests.support.emulator_app import api, emulator, image_body  # noqa: F401

from deployplane.api.dataplane import ServerRuntime
from deployplane.api.models import Source
from deployplane.emulator.store import dataplane as controlplane_dataplane

DISCARD = (
    "\x1b[2m2026-11-27T04:01:57Z\x1b[0m [\x1b[31m\x1b[1merror    \x1b[0m] Unable to load "
    "cached data - your code has changed in a way that's incompatible with the cache.\n"
    "This usually happens when you've:\n  - Renamed or moved classes\n\n"
    "Removing invalid cache data stored at path: .langgraph_api"
)


@pytest.fixture(autouse=True)
def in_memory_images(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(controlplane_dataplane, "runtime_of", lambda _: ServerRuntime.INMEM)
    assert controlplane_dataplane.runtime_of(Source.EXTERNAL_DOCKER) is ServerRuntime.INMEM


async def deploy_logs(world: World, deployment: dict[str, Any]) -> list[dict[str, Any]]:
    revision = deployment["latest_revision_id"]
    answer = await world.api.post(
        f"/v1/projects/{deployment['id']}/revisions/{revision}/deploy_logs",
        json={"order": "asc"},
    )
    lines: list[dict[str, Any]] = answer.json()["logs"]
    return lines


async def rolled_out(world: World, deployment: dict[str, Any], log: str = "") -> dict[str, Any]:
    """Applies, rolls out with a ready server pod whose log is `log`, reports DEPLOYED."""
    await world.agent.round()
    server = world.cluster.of_kind("Deployment")[0]
    world.cluster.add_pod(server, waiting_reason=None)
    world.cluster.current_logs[(f"{server['metadata']['name']}-pod", "agent-server")] = log
    world.cluster.roll_out()
    await world.agent.round()
    assert await world.revision_status(deployment) == "DEPLOYED"
    return server


async def test_the_claim_is_applied_owned_by_the_owner_and_goes_with_the_deployment(
    world: World,
) -> None:
    deployment = await world.deploy()
    server = await rolled_out(world, deployment)
    (claim,) = world.cluster.of_kind("PersistentVolumeClaim")
    (owner,) = world.cluster.of_kind("ConfigMap")
    assert claim["metadata"]["ownerReferences"][0]["uid"] == owner["metadata"]["uid"]
    name = f"img-app-{deployment['id'][:8]}-state"
    assert claim["metadata"]["name"] == name
    volumes = server["spec"]["template"]["spec"]["volumes"]
    assert {"name": "langgraph-state", "persistentVolumeClaim": {"claimName": name}} in volumes
    # nothing said: one replica was asked, and the server loaded its files
    assert not world.cluster.of_kind("Event")
    assert not [line for line in await deploy_logs(world, deployment) if line["level"] == "WARNING"]

    deleted = await world.api.delete(f"/v2/deployments/{deployment['id']}")
    assert deleted.status_code in (202, 204), deleted.text
    await world.agent.round()
    assert not world.cluster.of_kind("PersistentVolumeClaim")


async def test_more_replicas_than_one_is_a_warning_event_and_a_deploy_log_line(
    world: World,
) -> None:
    body = image_body()
    body["source_config"] = {"resource_spec": {"min_scale": 1, "max_scale": 4}}
    deployment = await world.deploy(body)
    server = await rolled_out(world, deployment)
    assert server["spec"]["replicas"] == 1
    (event,) = world.cluster.of_kind("Event")
    assert (event["type"], event["reason"]) == ("Warning", "OneReplica")
    involved = event["involvedObject"]
    assert (involved["kind"], involved["name"]) == ("Deployment", server["metadata"]["name"])
    assert involved["uid"] == server["metadata"]["uid"]  # what kubectl describe matches
    said = event["message"]
    assert said.startswith("resource_spec max_scale 4 runs as 1 replica: this revision's image")
    warnings = [line for line in await deploy_logs(world, deployment) if line["level"] == "WARNING"]
    assert [line["message"] for line in warnings] == [said]  # once, with the DEPLOYED report


async def test_a_server_that_discarded_its_saved_files_is_a_warning_in_the_deploy_logs(
    world: World,
) -> None:
    deployment = await world.deploy()
    await rolled_out(world, deployment, log="started\n" + DISCARD + "\nApplication started")
    warnings = [line for line in await deploy_logs(world, deployment) if line["level"] == "WARNING"]
    (warning,) = warnings
    assert warning["message"] == (
        "the server could not load its saved threads, runs, assistants and crons and "
        f"deleted them (img-app-{deployment['id'][:8]}-pod): 2026-11-27T04:01:57Z [error    ] "
        "Unable to load cached data - your code has changed in a way that's incompatible "
        "with the cache."
    )


async def test_the_vendors_runtime_has_no_claim(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(controlplane_dataplane, "runtime_of", lambda _: ServerRuntime.POSTGRES)
    deployment = await world.deploy()
    await world.agent.round()
    assert not world.cluster.of_kind("PersistentVolumeClaim")
    assert await world.revision_status(deployment) == "DEPLOYING"
