"""`deployplane export` against the emulator in process: what it reads, and what the
operator's reconcile loop (Kubernetes faked, the emulator real) makes of what it wrote.

Deployments and a listener are made directly on the emulator, exported, and the
exported objects handed to the operator's passes: every one is adopted and Ready, and
the control plane sees reads only (no POST, PATCH or DELETE)."""

from __future__ import annotations

from typing import Any

import httpx
from tests.support.emulator_app import K8S_LISTENER, git_body, image_body, wait_for
from tests.support.reconcile_harness import NS, Harness, condition, cr, harness, settle

from deployplane.api.client import ControlPlaneClient
from deployplane.cli.commands.export.command import read_resources
from deployplane.cli.commands.export.cr import Export, Exported, Policy, export
from deployplane.emulator.store.answers import SECRET_VALUE_MASK
from deployplane.externals.connections import Connection
from deployplane.reconcile.resourcestate import ResourceState

__all__ = ["harness"]  # the fixture, imported for the tests below


async def _created(http: httpx.AsyncClient, path: str, body: dict[str, Any]) -> dict[str, Any]:
    response = await http.post(path, json=body)
    assert response.status_code == 201, response.text
    created: dict[str, Any] = response.json()
    return created


async def _all_deployed(http: httpx.AsyncClient) -> bool:
    listed = (await http.get("/v2/deployments", params={"limit": 100})).json()["resources"]
    for dep in listed:
        path = f"/v2/deployments/{dep['id']}/revisions/{dep['latest_revision_id']}"
        if (await http.get(path)).json()["status"] != "DEPLOYED":
            return False
    return True


async def seed(http: httpx.AsyncClient, *, secrets: bool) -> dict[str, str]:
    """A listener and three deployments made by somebody else: names -> ids."""
    listener = await _created(
        http, "/v2/listeners", {**K8S_LISTENER, "compute_config": {"k8s_namespaces": ["agents"]}}
    )
    on_listener = image_body("edge-bot")
    on_listener["source_config"] = {
        "listener_id": listener["id"],
        "listener_config": {"k8s_namespace": "agents"},
        "resource_spec": {"min_scale": 1, "cpu": 0.5, "labels": {"team_name": "a"}},
        "custom_url": "https://edge-bot.example",
    }
    odd = image_body("Odd_Name.v2")
    for body in (on_listener, odd):
        if not secrets:
            del body["secrets"]
    made = [await _created(http, "/v2/deployments", b) for b in (on_listener, odd, git_body())]
    await wait_for(lambda: _all_deployed(http))
    return {"listener": listener["id"], **{d["name"]: d["id"] for d in made}}


async def exported(h: Harness, policy: Policy, name_contains: str | None = None) -> Export:
    client: ControlPlaneClient = h.client_factory(Connection("http://emulator", "key-a"))
    async with client:
        found = await read_resources(client, name_contains, True)
    return export(found.deployments, found.listeners, policy)


async def adopt(h: Harness, result: Export) -> dict[str, ResourceState]:
    """Every exported object through the operator's passes, Listeners first (the
    deployments' listenerRef reads their status); each pass settled."""
    deployments, listeners = h.runners()
    states: dict[str, ResourceState] = {}
    for item in result.resources:
        if item.secret is not None:  # the placeholder Secret the user creates
            h.kube.put_secret(NS, item.secret.name, {k: f"value-of-{k}" for k in item.secret.keys})
        body, state = _object(item), ResourceState()
        state.status = {}
        loop = listeners if item.kind == "Listener" else deployments
        await settle(loop, body, state, h)
        states[item.reference] = state
    return states


def _object(item: Exported) -> dict[str, Any]:
    return cr(item.name, item.body["spec"])


def writes(h: Harness) -> list[tuple[str, str, int]]:
    return [call for call in h.calls if call[0] != "GET"]


async def test_export_reads_every_deployment_and_listener_with_listener_refs(
    harness: Harness,
) -> None:
    ids = await seed(harness.http, secrets=True)
    result = await exported(harness, Policy.OBSERVE_ONLY)
    refs = {item.reference: item for item in result.resources}
    assert sorted(refs) == [
        "agentdeployment/edge-bot",
        "agentdeployment/git-app",
        "agentdeployment/odd-name-v2",
        "listener/cluster-1",
    ]
    edge = refs["agentdeployment/edge-bot"].body["spec"]
    assert edge["deploymentId"] == ids["edge-bot"]
    assert edge["sourceConfig"]["listenerRef"] == {"name": "cluster-1"}
    assert edge["secrets"] == [
        {
            "name": "OPENAI_API_KEY",
            "valueFrom": {"secretKeyRef": {"name": "edge-bot", "key": "OPENAI_API_KEY"}},
        }
    ]
    assert refs["agentdeployment/odd-name-v2"].body["spec"]["name"] == "Odd_Name.v2"
    assert refs["listener/cluster-1"].body["spec"]["listenerId"] == ids["listener"]
    assert [s.name for s in result.secrets] == ["edge-bot", "odd-name-v2"]
    assert "sk-very-secret-value" not in str(result)
    assert SECRET_VALUE_MASK not in str(result)  # the answers' mask is never exported
    assert {c[0] for c in harness.calls} == {"GET"}


async def test_name_contains_narrows_the_export(harness: Harness) -> None:
    await seed(harness.http, secrets=False)
    result = await exported(harness, Policy.OBSERVE_ONLY, name_contains="bot")
    # edge-bot, and the listener it runs on; not git-app, not Odd_Name.v2
    assert [item.reference for item in result.resources] == [
        "listener/cluster-1",
        "agentdeployment/edge-bot",
    ]


async def test_managed_export_is_adopted_ready_without_a_single_write(harness: Harness) -> None:
    ids = await seed(harness.http, secrets=False)
    result = await exported(harness, Policy.FULL)
    harness.calls.clear()
    states = await adopt(harness, result)
    assert writes(harness) == []  # no POST, no PATCH, no DELETE: nothing differed
    for reference, state in states.items():
        assert condition(state, "Ready")["status"] == "True", (reference, state.status)
        assert condition(state, "Synced")["status"] == "True", (reference, state.status)
    assert states["agentdeployment/git-app"].status is not None
    assert states["agentdeployment/git-app"].status["deploymentId"] == ids["git-app"]
    assert states["listener/cluster-1"].status is not None
    assert states["listener/cluster-1"].status["listenerId"] == ids["listener"]
