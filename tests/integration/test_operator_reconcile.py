"""The operator's passes against the real emulator app, in process.

Kubernetes is replaced by `FakeKube` (Secrets, Listener statuses, status writes); the
control plane is the emulator over ASGITransport. This proves the reconciliation
protocol end to end without a cluster; the e2e suite proves it again on a real one.
"""
# ruff: noqa: F811  (the harness fixture, imported by name, is a parameter here)

from __future__ import annotations

import copy
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
from tests.support.emulator_app import (
    INTEGRATION_A,
    revision_status,
    wait_for,
)
from tests.support.reconcile_harness import (  # noqa: F401  (harness: a fixture)
    NS,
    Harness,
    condition,
    cr,
    docker_spec,
    harness,
    settle,
)

from deployplane.kinds.agentdeployment.spec import AgentDeploymentSpec
from deployplane.kinds.agentdeployment.status import AgentDeploymentStatus
from deployplane.reconcile.finalizer import FINALIZER
from deployplane.reconcile.marker import CREATE_PENDING_ANNOTATION, EXTERNAL_NAME_ANNOTATION
from deployplane.reconcile.mergepatch import apply_merge_patch
from deployplane.reconcile.resourcestate import ResourceState

SECRET_VALUE = "sk-planted-secret-value-123"


async def _deployed(http: httpx.AsyncClient, dep_id: str, rev_id: str) -> bool:
    return await revision_status(http, dep_id, rev_id) == "DEPLOYED"


async def test_external_docker_deployment_reaches_ready_within_four_api_calls(
    harness: Harness,
) -> None:
    deployments, _ = harness.runners()
    body, state = cr("agent", docker_spec()), ResourceState()
    state.status = {}
    await deployments.one_pass(body, state, post_event=harness.events.append)
    assert state.status is not None
    dep_id, rev_id = state.status["deploymentId"], state.status["latestRevisionId"]
    # The daemon waits poll_interval (2 s) before polling; by then this fast pipeline is done.
    await wait_for(lambda: _deployed(harness.http, dep_id, rev_id))
    await settle(deployments, body, state, harness)

    assert condition(state, "Ready")["status"] == "True"
    assert condition(state, "Synced")["status"] == "True"
    # kstatus's abnormal-true conditions are absent when all is normal.
    assert [c["type"] for c in state.status["conditions"]] == ["Ready", "Synced"]
    assert state.status is not None
    assert state.status["revision"]["status"] == "DEPLOYED"
    assert state.status["activeRevisionId"] == state.status["latestRevisionId"]
    assert state.status["deploymentStatus"] == "READY"
    assert state.status["observedGeneration"] == 1
    assert "createPending" not in state.status
    assert len(harness.calls) <= 4, harness.calls
    assert [c[0] for c in harness.calls].count("POST") == 1
    assert any(e.reason == "Created" for e in harness.events)
    assert any(e.reason == "Deployed" for e in harness.events)


async def test_steady_state_pass_writes_nothing_and_resync_costs_one_call(harness: Harness) -> None:
    deployments, _ = harness.runners()
    body, state = cr("steady", docker_spec()), ResourceState()
    state.status = {}
    await settle(deployments, body, state, harness)
    writes, calls = len(harness.kube.writes), len(harness.calls)

    state.history.last_full = float("-inf")  # force the resync path
    await deployments.one_pass(body, state, post_event=harness.events.append)

    assert len(harness.kube.writes) == writes
    assert len(harness.calls) - calls == 1


async def test_image_change_rolls_a_new_revision_and_status_follows(harness: Harness) -> None:
    deployments, _ = harness.runners()
    body, state = cr("roll", docker_spec("registry.example.com/agent:1")), ResourceState()
    state.status = {}
    await settle(deployments, body, state, harness)
    assert state.status is not None
    first_revision = state.status["latestRevisionId"]

    body["spec"]["sourceRevisionConfig"]["imageUri"] = "registry.example.com/agent:2"
    body["metadata"]["generation"] = 2
    await settle(deployments, body, state, harness)

    assert state.status["latestRevisionId"] != first_revision
    assert state.status["revision"]["imageUri"] == "registry.example.com/agent:2"
    assert condition(state, "Ready")["status"] == "True"
    assert state.status["observedGeneration"] == 2
    patches = [c for c in harness.calls if c[0] == "PATCH"]
    assert len(patches) == 1


async def test_failed_revision_stalls_with_the_reason(harness: Harness) -> None:
    deployments, _ = harness.runners()
    body, state = cr("broken", docker_spec("registry.example.com/agent:broken")), ResourceState()
    state.status = {}
    await settle(deployments, body, state, harness)

    stalled = condition(state, "Stalled")
    assert stalled["status"] == "True"
    assert stalled["reason"] == "DeployFailed"
    assert condition(state, "Ready")["status"] == "False"
    assert any(e.type == "Warning" and e.reason == "DeployFailed" for e in harness.events)


async def test_secret_rotation_rolls_a_new_revision_and_values_never_reach_status(
    harness: Harness,
) -> None:
    harness.kube.put_secret(NS, "llm-keys", {"openai": SECRET_VALUE})
    deployments, _ = harness.runners()
    spec = docker_spec(
        secrets=[
            {
                "name": "OPENAI_API_KEY",
                "valueFrom": {"secretKeyRef": {"name": "llm-keys", "key": "openai"}},
            }
        ]
    )
    body, state = cr("secretive", spec), ResourceState()
    state.status = {}
    await settle(deployments, body, state, harness)
    assert state.status is not None
    first_revision = state.status["latestRevisionId"]

    harness.kube.put_secret(NS, "llm-keys", {"openai": SECRET_VALUE + "-rotated"})
    state.history.last_full = float("-inf")  # the resync (or a Secret watch) notices
    await settle(deployments, body, state, harness)

    assert state.status["latestRevisionId"] != first_revision
    assert condition(state, "Ready")["status"] == "True"
    everything = repr(harness.kube.writes) + repr(harness.events) + repr(state.status)
    assert SECRET_VALUE not in everything


async def test_missing_secret_key_waits_with_dependency_not_ready(harness: Harness) -> None:
    harness.kube.put_secret(NS, "llm-keys", {"anthropic": "x"})
    deployments, _ = harness.runners()
    spec = docker_spec(
        secrets=[
            {"name": "K", "valueFrom": {"secretKeyRef": {"name": "llm-keys", "key": "openai"}}}
        ]
    )
    body, state = cr("waiting", spec), ResourceState()
    state.status = {}
    await deployments.one_pass(body, state, post_event=harness.events.append)

    synced = condition(state, "Synced")
    assert synced["status"] == "False"
    assert synced["reason"] == "DependencyNotReady"
    assert synced["message"] == "Secret llm-keys has no key openai"
    assert "Stalled" not in {c["type"] for c in state.status["conditions"]}
    assert harness.calls == []  # never calls the API with half a spec


async def test_crash_between_post_and_id_write_adopts_instead_of_creating_twice(
    harness: Harness,
) -> None:
    deployments, _ = harness.runners()
    body = cr("crashy", docker_spec())
    harness.kube.fail_write_when = lambda patch: "deploymentId" in patch
    state = ResourceState()
    state.status = {}
    with pytest.raises(RuntimeError, match="simulated crash"):
        await deployments.one_pass(body, state, post_event=harness.events.append)

    # The operator restarts: its memory is gone; the stored object has only the marker
    # (with our finalizer), its status no id.
    harness.kube.fail_write_when = None
    stored = copy.deepcopy(harness.kube.objects[(NS, "agentdeployments", "crashy")])
    assert stored["metadata"]["annotations"][EXTERNAL_NAME_ANNOTATION] == "crashy"
    assert stored["metadata"]["finalizers"] == [FINALIZER]
    assert "deploymentId" not in harness.kube.statuses.get((NS, "agentdeployments", "crashy"), {})
    body = apply_merge_patch(body, stored)
    restarted = ResourceState()
    restarted.seed(body)
    await settle(deployments, body, restarted, harness)

    assert len(await harness.deployments_named("crashy")) == 1
    assert condition(restarted, "Ready")["status"] == "True"
    assert [c[0] for c in harness.calls].count("POST") == 1


async def test_name_taken_by_someone_else_stalls_with_conflict(harness: Harness) -> None:
    response = await harness.http.post(
        "/v2/deployments",
        json={
            "name": "taken",
            "source": "external_docker",
            "source_revision_config": {"image_uri": "x:1"},
        },
    )
    assert response.status_code in (200, 201)
    deployments, _ = harness.runners()
    body, state = cr("taken", docker_spec()), ResourceState()
    state.status = {}
    result = await deployments.one_pass(body, state, post_event=harness.events.append)
    outcome_delay = result.requeue_after

    assert condition(state, "Stalled")["reason"] == "Conflict"
    assert state.status is not None
    assert "createPending" not in state.status
    assert outcome_delay == harness.timing.resync  # no retry storm


async def test_git_host_via_repository_resolves_url_and_default_branch(harness: Harness) -> None:
    deployments, _ = harness.runners()
    spec = {
        "source": "git_host",
        "sourceConfig": {
            "integrationId": str(INTEGRATION_A),
            "repository": {"owner": "acme", "name": "support-bot"},
            "buildOnPush": False,
        },
        "sourceRevisionConfig": {"graphConfigPath": "langgraph.json"},
    }
    body, state = cr("git-agent", spec), ResourceState()
    state.status = {}
    await settle(deployments, body, state, harness)

    assert condition(state, "Ready")["status"] == "True"
    assert state.status is not None
    assert state.status["revision"]["repoRef"] == "main"
    assert len(state.status["revision"]["repoCommitSha"]) == 40
    (dep,) = await harness.deployments_named("git-agent")
    assert dep["source_config"]["repo_url"] == "https://git.example.com/acme/support-bot"


async def test_unknown_integration_stalls_without_retry_storm(harness: Harness) -> None:
    deployments, _ = harness.runners()
    spec = {
        "source": "git_host",
        "sourceConfig": {
            "integrationId": "99999999-9999-9999-9999-999999999999",
            "repository": {"owner": "acme", "name": "support-bot"},
        },
        "sourceRevisionConfig": {"graphConfigPath": "langgraph.json"},
    }
    body, state = cr("nowhere", spec), ResourceState()
    state.status = {}
    result = await deployments.one_pass(body, state, post_event=harness.events.append)
    delay = result.requeue_after

    stalled = condition(state, "Stalled")
    assert stalled["status"] == "True"
    assert stalled["reason"] == "NotFound"
    assert delay == harness.timing.resync
    assert len(harness.calls) == 1


async def test_out_of_band_change_is_put_back_at_resync(harness: Harness) -> None:
    deployments, _ = harness.runners()
    body, state = cr("drifty", docker_spec("registry.example.com/agent:1")), ResourceState()
    state.status = {}
    await settle(deployments, body, state, harness)
    assert state.status is not None
    dep_id = state.status["deploymentId"]
    response = await harness.http.patch(
        f"/v2/deployments/{dep_id}",
        json={"source_revision_config": {"image_uri": "registry.example.com/hacked:9"}},
    )
    assert response.status_code == 200, response.text

    state.history.last_full = float("-inf")
    await settle(deployments, body, state, harness)

    response = await harness.http.get(f"/v2/deployments/{dep_id}")
    assert response.json()["source_revision_config"]["image_uri"] == "registry.example.com/agent:1"
    assert condition(state, "Ready")["status"] == "True"


async def test_delete_policy_deletes_and_waits_for_404_orphan_releases(harness: Harness) -> None:
    deployments, _ = harness.runners()
    doomed, kept = cr("doomed", docker_spec()), cr("kept", docker_spec(deletionPolicy="Orphan"))
    states = {}
    for body in (doomed, kept):
        state = ResourceState()
        state.status = {}
        await settle(deployments, body, state, harness)
        states[body["metadata"]["name"]] = state

    from deployplane.reconcile.passes import to_managed

    orphan = to_managed(
        AgentDeploymentSpec, AgentDeploymentStatus, kept, states["kept"].status or {}
    )
    assert await deployments.reconciler.finalize(orphan) is True
    assert len(await harness.deployments_named("kept")) == 1

    mr = to_managed(
        AgentDeploymentSpec, AgentDeploymentStatus, doomed, states["doomed"].status or {}
    )
    import asyncio

    for _ in range(100):
        if await deployments.reconciler.finalize(mr):
            break
        await asyncio.sleep(0.02)
    else:
        raise AssertionError("deployment was never deleted")
    assert await harness.deployments_named("doomed") == []


async def test_adopting_an_existing_deployment_by_id(harness: Harness) -> None:
    response = await harness.http.post(
        "/v2/deployments",
        json={
            "name": "legacy",
            "source": "external_docker",
            "source_revision_config": {"image_uri": "registry.example.com/agent:1"},
        },
    )
    dep_id = response.json()["id"]
    deployments, _ = harness.runners()
    body = cr(
        "adopter", docker_spec("registry.example.com/agent:1", deploymentId=dep_id, name="legacy")
    )
    state = ResourceState()
    state.status = {}
    await settle(deployments, body, state, harness)

    assert state.status is not None
    assert state.status["deploymentId"] == dep_id
    assert [c[0] for c in harness.calls].count("POST") == 0
    assert any(e.reason == "Adopted" for e in harness.events)


async def test_listener_then_deployment_with_listener_ref(harness: Harness) -> None:
    deployments, listeners = harness.runners()
    spec = docker_spec()
    spec["sourceConfig"]["listenerRef"] = {"name": "cluster-a"}
    spec["sourceConfig"]["listenerConfig"] = {"k8sNamespace": "agents"}
    dep_body, dep_state = cr("on-listener", spec), ResourceState()
    dep_state.status = {}

    await deployments.one_pass(dep_body, dep_state, post_event=harness.events.append)
    assert condition(dep_state, "Synced")["message"] == "Listener cluster-a not found"

    lst_body = cr(
        "cluster-a",
        {
            "computeType": "k8s",
            "computeId": "cluster-a",
            "computeConfig": {"k8sNamespaces": ["agents"]},
            "version": "1",
        },
    )
    lst_state = ResourceState()
    lst_state.status = {}
    await settle(listeners, lst_body, lst_state, harness)
    assert condition(lst_state, "Ready")["status"] == "True"
    assert lst_state.status is not None
    listener_id = lst_state.status["listenerId"]

    await settle(deployments, dep_body, dep_state, harness)
    assert condition(dep_state, "Ready")["status"] == "True"
    (dep,) = await harness.deployments_named("on-listener")
    assert dep["source_config"]["listener_id"] == listener_id

    # A version bump is patched, not recreated.
    lst_body["spec"]["version"] = "2"
    lst_body["metadata"]["generation"] = 2
    await settle(listeners, lst_body, lst_state, harness)
    response = await harness.http.get(f"/v2/listeners/{listener_id}")
    assert response.json()["version"] == "2"


# ------------------------------------------------------------------ spec.agent


def agent_spec(environment: str = "production", **extra: Any) -> dict[str, Any]:
    return docker_spec(agent={"agentId": "support-bot", "environment": environment}, **extra)


async def by_agent(h: Harness, environment: str) -> list[dict[str, Any]]:
    params = {"agent_id": "support-bot", "agent_environment": environment}
    response = await h.http.get("/v2/deployments", params=params)
    assert response.status_code == 200, response.text
    resources: list[dict[str, Any]] = response.json()["resources"]
    return resources


async def test_an_agents_deployment_is_created_through_its_agent(harness: Harness) -> None:
    deployments, _ = harness.runners()
    body, state = cr("bot-prod", agent_spec()), ResourceState()
    state.status = {}
    await settle(deployments, body, state, harness)

    assert condition(state, "Ready")["status"] == "True"
    (made,) = await by_agent(harness, "production")
    assert made["id"] == state.status["deploymentId"]  # type: ignore[index]
    assert made["name"] == "support-bot-production"  # the control plane's name
    assert made["agent"] == {"agent_id": "support-bot", "environment": "production"}
    marker = harness.kube.objects[(NS, "agentdeployments", "bot-prod")]["metadata"]
    assert marker["annotations"][EXTERNAL_NAME_ANNOTATION] == "agent support-bot in production"
    assert [c[0] for c in harness.calls].count("POST") == 1


async def test_crash_after_an_agents_create_recovers_it_through_the_agent_filters(
    harness: Harness,
) -> None:
    deployments, _ = harness.runners()
    body = cr("crashy-bot", agent_spec("staging"))
    harness.kube.fail_write_when = lambda patch: "deploymentId" in patch
    state = ResourceState()
    state.status = {}
    with pytest.raises(RuntimeError, match="simulated crash"):
        await deployments.one_pass(body, state, post_event=harness.events.append)

    harness.kube.fail_write_when = None
    stored = copy.deepcopy(harness.kube.objects[(NS, "agentdeployments", "crashy-bot")])
    assert CREATE_PENDING_ANNOTATION in stored["metadata"]["annotations"]
    body = apply_merge_patch(body, stored)
    restarted = ResourceState()
    restarted.seed(body)
    await settle(deployments, body, restarted, harness)

    (made,) = await by_agent(harness, "staging")
    assert restarted.status is not None
    assert restarted.status["deploymentId"] == made["id"]
    assert condition(restarted, "Ready")["status"] == "True"
    assert [c[0] for c in harness.calls].count("POST") == 1
    assert ("GET", "/v2/deployments", 200) in harness.calls  # looked up by the agent filters


async def second_of_an_agent(
    h: Harness, annotations: dict[str, str] | None = None
) -> tuple[ResourceState, dict[str, Any], dict[str, Any]]:
    """A first AgentDeployment of support-bot in production, Ready; then a second of the
    same agent and environment (with `annotations`), one pass."""
    deployments, _ = h.runners()
    first, first_state = cr("bot-a", agent_spec()), ResourceState()
    first_state.status = {}
    await settle(deployments, first, first_state, h)
    second = cr("bot-b", agent_spec())
    second["metadata"]["annotations"] = dict(annotations or {})
    state = ResourceState()
    state.seed(second)
    await deployments.one_pass(second, state, post_event=h.events.append)
    return state, first_state.status or {}, second


async def test_a_second_agentdeployment_of_an_agent_stalls_with_the_409(harness: Harness) -> None:
    state, first, _ = await second_of_an_agent(harness)

    stalled = condition(state, "Stalled")
    assert (stalled["status"], stalled["reason"]) == ("True", "Conflict")
    assert "This agent already has a deployment in this environment" in stalled["message"]
    assert state.status is not None
    assert not state.status.get("deploymentId")
    assert state.marker is None  # taken off: no later pass may adopt by it
    (only,) = await by_agent(harness, "production")
    assert only["id"] == first["deploymentId"]


async def test_a_second_agentdeployment_never_adopts_the_firsts_deployment_by_its_marker(
    harness: Harness,
) -> None:
    """Its own first create's answer was lost (the marker is on it, from a pass that
    began two minutes after the first's deployment was made): the agent filters find the
    first's deployment, which predates that create, so it is not taken for its own."""
    later = (datetime.now(UTC) + timedelta(minutes=2)).strftime("%Y-%m-%dT%H:%M:%SZ")
    annotations = {
        EXTERNAL_NAME_ANNOTATION: "agent support-bot in production",
        CREATE_PENDING_ANNOTATION: later,
    }
    state, first, second = await second_of_an_agent(harness, annotations)

    assert condition(state, "Stalled")["reason"] == "Conflict"
    assert state.status is not None
    assert not state.status.get("deploymentId")
    assert not any(e.reason == "Adopted" for e in harness.events)
    stored = harness.kube.objects[(NS, "agentdeployments", "bot-b")]["metadata"]["annotations"]
    assert EXTERNAL_NAME_ANNOTATION not in stored
    # deleted, it deletes nothing of the first's either
    deployments, _ = harness.runners()
    assert await deployments.finalize(apply_merge_patch(second, {"metadata": {}}), state) is None
    (only,) = await by_agent(harness, "production")
    assert (only["id"], only["status"]) == (first["deploymentId"], "READY")


async def test_a_marker_written_by_hand_adopts_the_agents_deployment(harness: Harness) -> None:
    """Crossplane's import: the external-name alone (no create time) adopts what the
    key finds."""
    created = await harness.http.post(
        "/v2/deployments",
        json={
            "agent": {"agent_id": "support-bot", "environment": "development"},
            "source": "external_docker",
            "source_revision_config": {"image_uri": "registry.example.com/agent:1"},
        },
    )
    assert created.status_code == 201, created.text
    deployments, _ = harness.runners()
    body = cr("imported", agent_spec("development"))
    body["metadata"]["annotations"] = {EXTERNAL_NAME_ANNOTATION: "agent support-bot in development"}
    state = ResourceState()
    state.seed(body)
    await settle(deployments, body, state, harness)
    assert state.status is not None
    assert state.status["deploymentId"] == created.json()["id"]
    assert [c[0] for c in harness.calls].count("POST") == 0
