"""Every fix of the spec reaches what runs, end to end on the dev cluster with kwok nodes
(the operator, a strict-contract client of the emulator; the listener agent with the
chart's RBAC): whatever state the latest revision is in when a resourceSpec change lands
(queued, building, deploying, DEPLOYED, DEPLOY_FAILED, BUILD_FAILED), the resource ends
Ready at the new generation, with no image change, and no condition ever asks for the
change already made. One of the failures is the cluster's own: a pod no node can hold
(Unschedulable), fixed by a smaller memoryMb.

The cases run side by side (one emulator, one agent, one operator). The in-flight states
last long enough to be met, and each case proves it met its state: the revision it
superseded ended SKIPPED (it had not started) or INTERRUPTED (it had), and a build
interrupted while BUILDING never logged its success. Every wait is bounded only to stop
a hang; nothing asserts how long a step took.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest
from kubernetes import client
from tests.support.dataplane_fixtures import (
    AGD,
    LST,
    SERVER_LABEL,
    agent,
    agent_kubeconfig,
    agents_namespace,
    deployment_body,
    listener_body,
    operator,
)
from tests.support.listener_agent import LISTENER, AgentProcess
from tests.support.nodes import Workloads
from tests.support.operator_harness import (
    API_KEY,
    INTEGRATION,
    WORKSPACE,
    Emulator,
    Resources,
    condition,
    ready_for_generation,
)

__all__ = ["agent", "agent_kubeconfig", "agents_namespace", "operator"]  # fixtures

STEP = 3.0  # seconds in each timed revision state: a window to meet QUEUED in
BUILD = 6.0  # seconds BUILDING
AGENT_ROUNDS = 5.0  # DEPLOYING lasts at least one round: the rollout is looked at next round
TOO_BIG_MB = 100_000  # more memory than any kwok node has (16Gi)
BUILD_FAILS = "build-fails"
IN_FLIGHT = ("CREATING", "QUEUED", "AWAITING_BUILD", "BUILDING", "AWAITING_DEPLOY", "DEPLOYING")
MANAGED_REVISION = ("repo_ref", "graph_config_path", "image_uri")


@pytest.fixture(scope="module")
def emulator(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Emulator]:
    """Normal mode (the data-plane extension), slow steps, and a build failure that only
    a deployment's first revision meets (one that a retry gets past)."""
    pipeline = {
        "step_seconds": STEP,
        "build_seconds": BUILD,
        "failures": [
            {"name_regex": f"^{BUILD_FAILS}", "first_revisions": 1, "status": "BUILD_FAILED"}
        ],
    }
    emu = Emulator(
        tmp_path_factory.mktemp("emulator"),
        step_seconds=STEP,
        strict=False,
        proxied=False,
        config={"pipeline": pipeline},
    ).start()
    yield emu
    emu.stop()


@pytest.fixture
def agent_poll_interval() -> float:
    return AGENT_ROUNDS


@dataclass
class Case:
    """One AgentDeployment, the state its latest revision is in when the fix lands, the
    fix (a resourceSpec merge patch), and what the superseded revision ends as."""

    name: str
    body: dict[str, Any]
    when: str
    fix: dict[str, Any]
    history: list[str]
    """The revisions' statuses at the end, newest first."""
    deployment_id: str = ""
    met: str = ""
    """The revision the fix met."""
    generation: int = 0
    stalled: str = ""
    """The Stalled message before the fix (a failed revision's)."""
    after: list[dict[str, Any]] = field(default_factory=list)
    """Every condition seen for the fixed generation."""


def git_body(name: str, agents: str) -> dict[str, Any]:
    return {
        "apiVersion": "deployplane.io/v1alpha1",
        "kind": "AgentDeployment",
        "metadata": {"name": name},
        "spec": {
            "source": "git_host",
            "sourceConfig": {
                "integrationId": INTEGRATION,
                "repository": {"owner": "acme", "name": "support-bot"},
                "listenerRef": {"name": LISTENER},
                "listenerConfig": {"k8sNamespace": agents},
                "resourceSpec": {"minScale": 2},
            },
            "sourceRevisionConfig": {"graphConfigPath": "langgraph.json"},
        },
    }


def cases(image: str, agents: str) -> list[Case]:
    scale = {"minScale": 1, "maxScale": 3}
    unschedulable = deployment_body("unschedulable", image, agents)
    unschedulable["spec"]["sourceConfig"]["resourceSpec"] = {"minScale": 1, "memoryMb": TOO_BIG_MB}
    return [
        Case("queued", deployment_body("queued", image, agents), "QUEUED", scale, ["SKIPPED"]),
        Case("building", git_body("building", agents), "BUILDING", scale, ["INTERRUPTED"]),
        Case(
            "deploying",
            deployment_body("deploying", image, agents),
            "DEPLOYING",
            scale,
            ["INTERRUPTED"],
        ),
        Case("deployed", deployment_body("deployed", image, agents), "DEPLOYED", scale, []),
        Case("unschedulable", unschedulable, "DEPLOY_FAILED", {"memoryMb": 256}, ["DEPLOY_FAILED"]),
        Case(
            BUILD_FAILS,
            deployment_body(BUILD_FAILS, image, agents),
            "BUILD_FAILED",
            scale,
            ["BUILD_FAILED"],
        ),
    ]


class ControlPlane:
    """What the emulator says (the published API, as a user's curl would read it)."""

    def __init__(self, emulator: Emulator) -> None:
        headers = {"X-Api-Key": API_KEY, "X-Tenant-Id": WORKSPACE}
        self.http = httpx.Client(base_url=emulator.url, headers=headers, timeout=30)

    def latest(self, deployment_id: str) -> dict[str, Any]:
        deployment = self.http.get(f"/v2/deployments/{deployment_id}").json()
        path = f"/v2/deployments/{deployment_id}/revisions/{deployment['latest_revision_id']}"
        revision: dict[str, Any] = self.http.get(path).json()
        return revision

    def history(self, deployment_id: str) -> list[dict[str, Any]]:
        """Newest first."""
        page = self.http.get(f"/v2/deployments/{deployment_id}/revisions").json()
        found: list[dict[str, Any]] = page["resources"]
        return found

    def build_log(self, deployment_id: str, revision_id: str) -> list[str]:
        path = f"/v1/projects/{deployment_id}/revisions/{revision_id}/build_logs"
        answer = self.http.post(path, json={"limit": 100})
        return [line["message"] for line in answer.json()["logs"]]


def stalled(obj: dict[str, Any] | None) -> bool:
    return condition(obj, "Stalled").get("status") == "True"


def due(case: Case, cp: ControlPlane, obj: dict[str, Any] | None) -> bool:
    """Whether the case's revision is in the state its fix is for: for a failure, once
    the resource says Stalled; for DEPLOYED, once it is Ready."""
    if not case.deployment_id:
        case.deployment_id = ((obj or {}).get("status") or {}).get("deploymentId") or ""
        if not case.deployment_id:
            return False
    if case.when == "DEPLOYED":
        return ready_for_generation(obj)
    if case.when.endswith("_FAILED"):
        return stalled(obj)
    status = cp.latest(case.deployment_id)["status"]
    assert status in IN_FLIGHT, f"{case.name}: the revision went on to {status} first"
    return bool(status == case.when)


def fix(case: Case, cp: ControlPlane, obj: dict[str, Any], resources: Resources) -> None:
    case.met = cp.latest(case.deployment_id)["id"]
    case.stalled = condition(obj, "Stalled").get("message", "")
    patch = {"spec": {"sourceConfig": {"resourceSpec": case.fix}}}
    resources.patch(AGD, case.name, patch)
    fixed = resources.get(AGD, case.name)
    assert fixed is not None
    case.generation = fixed["metadata"]["generation"]


def fix_each_in_its_state(cases: list[Case], cp: ControlPlane, resources: Resources) -> None:
    waiting = list(cases)
    deadline = time.monotonic() + 300
    while waiting:
        assert time.monotonic() < deadline, f"never met: {[c.name for c in waiting]}"
        for case in list(waiting):
            obj = resources.get(AGD, case.name)
            if due(case, cp, obj):
                assert obj is not None
                fix(case, cp, obj, resources)
                waiting.remove(case)
        time.sleep(0.25)


def wait_ready_watching_conditions(cases: list[Case], resources: Resources) -> None:
    """Until every case is Ready at its fixed generation; every condition set for that
    generation meanwhile is kept, to check what it said."""
    waiting = list(cases)
    deadline = time.monotonic() + 300
    while waiting:
        assert time.monotonic() < deadline, f"not Ready: {[c.name for c in waiting]}"
        for case in list(waiting):
            obj = resources.get(AGD, case.name)
            for c in ((obj or {}).get("status") or {}).get("conditions", []):
                if c.get("observedGeneration") == case.generation and c not in case.after:
                    case.after.append(c)
            if ready_for_generation(obj):
                assert obj is not None
                assert obj["metadata"]["generation"] == case.generation
                waiting.remove(case)
        time.sleep(0.25)


def events_of(k8s_api: client.ApiClient, namespace: str, name: str) -> list[tuple[str, str]]:
    listed = client.CoreV1Api(k8s_api).list_namespaced_event(
        namespace, field_selector=f"involvedObject.name={name},involvedObject.kind=AgentDeployment"
    )
    return [(e.reason, e.message) for e in listed.items]


def test_a_resource_fix_reaches_what_runs_from_every_revision_state(
    operator: Any,
    agent: AgentProcess,
    resources: Resources,
    emulator: Emulator,
    namespace: str,
    agents_namespace: str,
    k8s_api: client.ApiClient,
    workload_images: Workloads,
) -> None:
    resources.create(LST, listener_body(namespace, agents_namespace))
    agent.wait_running()
    cp = ControlPlane(emulator)
    all_cases = cases(workload_images.agent_image(1), agents_namespace)
    for case in all_cases:
        resources.create(AGD, case.body)

    fix_each_in_its_state(all_cases, cp, resources)
    wait_ready_watching_conditions(all_cases, resources)

    for case in all_cases:
        obj = resources.get(AGD, case.name)
        assert obj is not None
        history = cp.history(case.deployment_id)
        statuses = [r["status"] for r in history]
        assert statuses == ["DEPLOYED", *case.history], (case.name, statuses)
        assert history[-1]["id"] == case.met, case.name  # the fix met the first revision
        # No image change: the new revision runs what the one the fix met would have.
        first, last = (
            {k: r["source_revision_config"].get(k) for k in MANAGED_REVISION}
            for r in (history[-1], history[0])
        )
        assert first == last, (case.name, first, last)
        image = case.body["spec"]["sourceRevisionConfig"].get("imageUri")
        assert obj["status"]["revision"].get("imageUri") == image, case.name
        # At the new generation nothing stalled, nothing asked for a change, and (when the
        # fix made a revision) nothing was about the one it met.
        assert not [c for c in case.after if c["type"] == "Stalled"], case.after
        assert not [c for c in case.after if "change of the spec" in c["message"]], case.after
        if case.history:
            assert not [c for c in case.after if case.met in c["message"]], case.after
        if case.when.endswith("_FAILED"):
            assert f"Revision {case.met} ended {case.when}; " in case.stalled, case.stalled
            assert "the next change of the spec rolls a new revision" in case.stalled

    by_name = {case.name: case for case in all_cases}
    unschedulable = by_name["unschedulable"]
    assert "Unschedulable" in unschedulable.stalled, unschedulable.stalled
    pods = (
        client.CoreV1Api(k8s_api)
        .list_namespaced_pod(agents_namespace, label_selector=SERVER_LABEL)
        .items
    )
    ours = [
        p
        for p in pods
        if p.metadata.name.startswith("unschedulable-")
        and p.metadata.deletion_timestamp is None
        and p.status.phase == "Running"
    ]
    requests = [p.spec.containers[0].resources.requests for p in ours]
    assert requests, "no pod of the fixed revision runs"
    assert all(r["memory"] == "256M" for r in requests), requests

    interrupted = by_name["building"]
    assert not [
        line
        for line in cp.build_log(interrupted.deployment_id, interrupted.met)
        if line.startswith("Build succeeded")
    ], "the build the fix interrupted had finished"

    # One Deployed Event per revision reached: the change to the deployed revision
    # says it runs, not Deployed again.
    deployed = by_name["deployed"]

    def change_applied() -> list[tuple[str, str]] | None:
        found = events_of(k8s_api, namespace, "deployed")
        return found if any(reason == "ChangeApplied" for reason, _ in found) else None

    found = resources_wait(change_applied)
    assert [m for r, m in found if r == "Deployed"] == [f"Revision {deployed.met} is deployed"]
    assert ("Updated", "Applied the change to sourceConfig.resourceSpec") in found


def resources_wait(probe: Any, within: float = 120.0) -> Any:
    """Events go out in the background (at most 10 a second): wait for them to show."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        value = probe()
        if value:
            return value
        time.sleep(0.5)
    raise AssertionError("the Events never showed")
