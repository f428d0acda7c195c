"""The data-plane extension (docs/dataplane.md), in-process against the emulator app.

Time is driven by hand: the emulator runs with hour-long steps, so its own worker never
moves anything, and each test calls `Pipeline.advance_due(now=...)` and records agent
heartbeats at chosen instants. Every test runs on SQLite and on PostgreSQL.
"""
# ruff: noqa: F811  (pytest fixtures imported from the harness are parameters here)

from __future__ import annotations

import uuid
from typing import Any

import httpx
import pytest
from tests.support.agent_world import Clock, clock, make_deployment, make_listener  # noqa: F401
from tests.support.emulator_app import (  # noqa: F401  (fixtures)
    KEY_B,
    api,
    emulator,
    git_body,
    image_body,
    make_settings,
    running_app,
)

from deployplane.emulator.store import agents
from deployplane.emulator.store.dataplane import built_image

pytestmark = pytest.mark.postgres

EXT = "/_dataplane/v1/listeners"


async def revision(api: httpx.AsyncClient, deployment: dict[str, Any]) -> dict[str, Any]:
    path = f"/v2/deployments/{deployment['id']}/revisions/{deployment['latest_revision_id']}"
    response = await api.get(path)
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def report_path(
    listener_id: str, deployment: dict[str, Any], revision_id: str | None = None
) -> str:
    rid = revision_id or deployment["latest_revision_id"]
    return f"{EXT}/{listener_id}/deployments/{deployment['id']}/revisions/{rid}/status"


def work_path(listener_id: str, deployment: dict[str, Any]) -> str:
    rid = deployment["latest_revision_id"]
    return f"{EXT}/{listener_id}/deployments/{deployment['id']}/revisions/{rid}"


# ------------------------------------------------------------------ heartbeat, auth


async def test_heartbeat_needs_credentials_and_a_listener_of_the_workspace(
    api: httpx.AsyncClient,
) -> None:
    listener_id = await make_listener(api)
    beat = await api.put(f"{EXT}/{listener_id}/heartbeat")
    assert beat.status_code == 200, beat.text
    assert beat.json() == {"listener_id": listener_id, "ttl_seconds": agents.AGENT_TTL_SECONDS}
    anonymous = await api.put(f"{EXT}/{listener_id}/heartbeat", headers={"X-Api-Key": ""})
    assert anonymous.status_code == 401
    other_workspace = await api.put(f"{EXT}/{listener_id}/heartbeat", headers={"X-Api-Key": KEY_B})
    assert other_workspace.status_code == 404
    assert (await api.put(f"{EXT}/{uuid.uuid4()}/heartbeat")).status_code == 404


# ------------------------------------------------------------------ hand-off


async def test_live_agent_gets_the_deploy_stages_and_its_reports_drive_the_revision(
    api: httpx.AsyncClient, clock: Clock
) -> None:
    listener_id = await make_listener(api)
    deployment = await make_deployment(api, listener_id)
    await clock.step(10, beating=listener_id)
    # The timers stopped at AWAITING_DEPLOY: ten steps would have deployed it.
    assert (await revision(api, deployment))["status"] == "AWAITING_DEPLOY"

    work = (await api.get(work_path(listener_id, deployment))).json()
    assert work["image_uri"] == "registry.example.com/app:1"
    assert work["secret_values"] == {"OPENAI_API_KEY": "sk-very-secret-value"}

    deploying = await api.put(report_path(listener_id, deployment), json={"status": "DEPLOYING"})
    assert deploying.status_code == 200, deploying.text
    await clock.step(10, beating=listener_id)
    assert (await revision(api, deployment))["status"] == "DEPLOYING"

    deployed = await api.put(
        report_path(listener_id, deployment),
        json={"status": "DEPLOYED", "deployment_status": "READY"},
    )
    assert deployed.status_code == 200, deployed.text
    assert (await revision(api, deployment))["status"] == "DEPLOYED"
    after = (await api.get(f"/v2/deployments/{deployment['id']}")).json()
    assert after["status"] == "READY"
    assert after["active_revision_id"] == deployment["latest_revision_id"]
    assert after["image_version"] == "registry.example.com/app:1"
    # An agent restarted after its report says it again: a harmless no-op.
    again = await api.put(report_path(listener_id, deployment), json={"status": "DEPLOYED"})
    assert again.status_code == 200


async def test_listener_without_agent_keeps_the_simulated_pipeline(
    api: httpx.AsyncClient, clock: Clock
) -> None:
    listener_id = await make_listener(api)
    deployment = await make_deployment(api, listener_id)
    await clock.step(10)
    assert (await revision(api, deployment))["status"] == "DEPLOYED"


async def test_agent_silent_longer_than_the_ttl_counts_as_absent(
    api: httpx.AsyncClient, clock: Clock
) -> None:
    listener_id = await make_listener(api)
    deployment = await make_deployment(api, listener_id)
    await clock.beat(listener_id)  # then a step (an hour) later it is long expired
    await clock.step(10)
    assert (await revision(api, deployment))["status"] == "DEPLOYED"


async def test_handed_off_revision_stays_with_the_agent_when_it_goes_quiet(
    api: httpx.AsyncClient, clock: Clock
) -> None:
    listener_id = await make_listener(api)
    deployment = await make_deployment(api, listener_id)
    await clock.step(3, beating=listener_id)
    assert (await revision(api, deployment))["status"] == "AWAITING_DEPLOY"
    await clock.step(10)  # no more heartbeats: the emulator cannot know it deployed
    assert (await revision(api, deployment))["status"] == "AWAITING_DEPLOY"


async def test_git_host_builds_simulated_and_the_agent_gets_the_built_image(
    api: httpx.AsyncClient, clock: Clock
) -> None:
    listener_id = await make_listener(api)
    deployment = await make_deployment(api, listener_id, git_body())
    early = (await api.get(work_path(listener_id, deployment))).json()
    assert early["image_uri"] is None  # nothing built yet
    await clock.step(10, beating=listener_id)
    assert (await revision(api, deployment))["status"] == "AWAITING_DEPLOY"
    work = (await api.get(work_path(listener_id, deployment))).json()
    sha = deployment["source_revision_config"]["repo_commit_sha"]
    assert work["image_uri"] == built_image("git-app", sha)
    # The published revision is untouched: image_uri stays external_docker's field.
    assert (await revision(api, deployment))["source_revision_config"]["image_uri"] is None


# ------------------------------------------------------------------ failures, supersede


async def test_deploy_failed_keeps_the_agents_reason(api: httpx.AsyncClient, clock: Clock) -> None:
    listener_id = await make_listener(api)
    deployment = await make_deployment(api, listener_id)
    early = await api.put(report_path(listener_id, deployment), json={"status": "DEPLOYING"})
    assert early.status_code == 409  # CREATING: not in the agent's stages yet
    await clock.step(3, beating=listener_id)
    reason = "ImagePullBackOff: image registry.example.com/app:1 cannot be pulled"
    failed = await api.put(
        report_path(listener_id, deployment), json={"status": "DEPLOY_FAILED", "message": reason}
    )
    assert failed.status_code == 200, failed.text
    assert (await revision(api, deployment))["status"] == "DEPLOY_FAILED"
    assert (await api.get(work_path(listener_id, deployment))).json()["message"] == reason
    late = await api.put(report_path(listener_id, deployment), json={"status": "DEPLOYED"})
    assert late.status_code == 409


async def test_a_newer_revision_supersedes_the_rollout_in_progress(
    api: httpx.AsyncClient, clock: Clock
) -> None:
    listener_id = await make_listener(api)
    first = await make_deployment(api, listener_id)
    await clock.step(3, beating=listener_id)
    assert (
        await api.put(report_path(listener_id, first), json={"status": "DEPLOYING"})
    ).status_code == 200
    patch = {"source_revision_config": {"image_uri": "registry.example.com/app:2"}}
    second = (await api.patch(f"/v2/deployments/{first['id']}", json=patch)).json()
    assert (await revision(api, first))["status"] == "INTERRUPTED"
    stale = await api.put(report_path(listener_id, first), json={"status": "DEPLOYED"})
    assert stale.status_code == 409
    assert "no longer being deployed" in stale.json()["detail"]
    await clock.step(3, beating=listener_id)
    assert (await revision(api, second))["status"] == "AWAITING_DEPLOY"
    assert (await api.get(work_path(listener_id, second))).json()["image_uri"].endswith(":2")


async def test_reports_are_scoped_to_the_listeners_own_deployments(
    api: httpx.AsyncClient,
) -> None:
    mine = await make_listener(api, "cluster-1")
    other = await make_listener(api, "cluster-2")
    theirs = await make_deployment(api, other, image_body("theirs"))
    ours = await make_deployment(api, mine, image_body("ours"))
    deploying = {"status": "DEPLOYING"}
    refused = await api.put(report_path(mine, theirs), json=deploying)
    assert refused.status_code == 403
    assert "does not run on listener" in refused.json()["detail"]
    assert (await api.get(work_path(mine, theirs))).status_code == 403
    unknown = {**ours, "id": str(uuid.uuid4())}
    assert (await api.put(report_path(mine, unknown), json=deploying)).status_code == 404
    alien_revision = report_path(mine, ours, theirs["latest_revision_id"])
    assert (await api.put(alien_revision, json=deploying)).status_code == 404
    other_workspace = await api.put(
        report_path(mine, ours), json=deploying, headers={"X-Api-Key": KEY_B}
    )
    assert other_workspace.status_code == 404
    not_a_report = await api.put(report_path(mine, ours), json={"status": "BUILDING"})
    assert not_a_report.status_code == 422
    assert (await revision(api, theirs))["status"] == "CREATING"


async def test_database_not_ready_keeps_the_deployment_awaiting_database(
    api: httpx.AsyncClient, clock: Clock
) -> None:
    listener_id = await make_listener(api)
    deployment = await make_deployment(api, listener_id)
    await clock.step(3, beating=listener_id)
    path = report_path(listener_id, deployment)
    body = {"status": "DEPLOYED", "deployment_status": "AWAITING_DATABASE"}
    assert (await api.put(path, json=body)).status_code == 200
    state = (await api.get(f"/v2/deployments/{deployment['id']}")).json()
    assert state["status"] == "AWAITING_DATABASE"
    assert state["active_revision_id"] == deployment["latest_revision_id"]
    ready = {"status": "DEPLOYED", "deployment_status": "READY"}
    assert (await api.put(path, json=ready)).status_code == 200
    assert (await api.get(f"/v2/deployments/{deployment['id']}")).json()["status"] == "READY"


# ------------------------------------------------------------------ deletion


async def test_deletion_waits_for_the_live_agent_and_its_deleted_call(
    api: httpx.AsyncClient, clock: Clock
) -> None:
    listener_id = await make_listener(api)
    deployment = await make_deployment(api, listener_id)
    done = f"{EXT}/{listener_id}/deployments/{deployment['id']}/deleted"
    assert (await api.post(done)).status_code == 409  # not being deleted
    assert (await api.delete(f"/v2/deployments/{deployment['id']}")).is_success
    await clock.step(5, beating=listener_id)
    got = await api.get(f"/v2/deployments/{deployment['id']}")
    assert got.json()["status"] == "AWAITING_DELETE"
    gone = await api.post(done)
    assert gone.status_code == 204, gone.text
    assert (await api.get(f"/v2/deployments/{deployment['id']}")).status_code == 404


async def test_deletion_without_a_live_agent_is_removed_by_the_timer(
    api: httpx.AsyncClient, clock: Clock
) -> None:
    listener_id = await make_listener(api)
    deployment = await make_deployment(api, listener_id)
    assert (await api.delete(f"/v2/deployments/{deployment['id']}")).is_success
    await clock.step(2)
    assert (await api.get(f"/v2/deployments/{deployment['id']}")).status_code == 404


async def test_patched_secrets_replace_the_values_the_agent_gets(api: httpx.AsyncClient) -> None:
    listener_id = await make_listener(api)
    deployment = await make_deployment(api, listener_id)
    patch = {"secrets": [{"name": "TOKEN", "value": "t-2"}]}
    updated = (await api.patch(f"/v2/deployments/{deployment['id']}", json=patch)).json()
    work = (await api.get(work_path(listener_id, updated))).json()
    assert work["secret_values"] == {"TOKEN": "t-2"}


async def unreconciled_ids(api: httpx.AsyncClient) -> set[str]:
    listed = await api.get("/v2/deployments", params={"remote_reconciled": "false"})
    assert listed.status_code == 200, listed.text
    return {d["id"] for d in listed.json()["resources"]}


async def test_remote_reconciled_tracks_what_the_agent_still_has_to_do(
    api: httpx.AsyncClient, clock: Clock
) -> None:
    listener_id = await make_listener(api)
    deployment = await make_deployment(api, listener_id)
    assert deployment["id"] in await unreconciled_ids(api)
    await clock.step(3, beating=listener_id)
    path = report_path(listener_id, deployment)
    waiting = {"status": "DEPLOYED", "deployment_status": "AWAITING_DATABASE"}
    assert (await api.put(path, json=waiting)).status_code == 200
    assert deployment["id"] in await unreconciled_ids(api)  # its database is not ready
    ready = {"status": "DEPLOYED", "deployment_status": "READY"}
    assert (await api.put(path, json=ready)).status_code == 200
    assert deployment["id"] not in await unreconciled_ids(api)
    assert (await api.delete(f"/v2/deployments/{deployment['id']}")).is_success
    assert deployment["id"] in await unreconciled_ids(api)  # the agent has to remove it


async def test_strict_mode_does_not_serve_the_extension(database_url: str) -> None:
    settings = make_settings(database_url, step_seconds=3600, strict=True)
    async with running_app(settings) as (app, strict):
        listener_id = await make_listener(strict)
        assert (await strict.put(f"{EXT}/{listener_id}/heartbeat")).status_code == 404
        deployment = await make_deployment(strict, listener_id)
        assert (await strict.get(work_path(listener_id, deployment))).status_code == 404
        paths = app.openapi()["paths"]
        assert not [path for path in paths if path.startswith("/_dataplane")]


# ------------------------------------------------------------------ writes are whole


async def test_a_report_whose_answer_cannot_be_written_changes_nothing(
    api: httpx.AsyncClient, clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As on the published routes: the answer is serialised inside the write
    transaction, so a failure to write it rolls the report back."""
    # The data-plane write routes answer through deps.write_answer, as the published ones.
    from deployplane.emulator.web import deps

    listener_id = await make_listener(api)
    deployment = await make_deployment(api, listener_id)
    await clock.step(10, beating=listener_id)
    before = await revision(api, deployment)
    assert before["status"] == "AWAITING_DEPLOY"

    def unwritable(*_: Any, **__: Any) -> Any:
        raise ValueError("cannot serialise")

    monkeypatch.setattr(deps, "json_response", unwritable)
    with pytest.raises(ValueError, match="cannot serialise"):
        await api.put(report_path(listener_id, deployment), json={"status": "DEPLOYED"})
    monkeypatch.undo()
    assert await revision(api, deployment) == before
