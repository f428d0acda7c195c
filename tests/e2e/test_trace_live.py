"""`deployplane trace` end to end: an AgentDeployment on a Listener, DEPLOYED by the
listener agent on kwok nodes, traced through every level by a read-only identity; then
its Listener, down to the same objects.

Reads only, proven twice: the apiserver's audit log shows no write by the identity the
trace runs as (a ServiceAccount that may only get and list), and the emulator's own
request counts (`/_emulator/stats`) show no request but GETs while the trace ran.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import yaml
from kubernetes import client
from tests.support import dataplane_fixtures as dataplane
from tests.support.dataplane_fixtures import (
    AGD,
    LST,
    Cluster,
    deployment_body,
    listener_body,
    wait_until,
)
from tests.support.e2ecluster import E2ECluster
from tests.support.listener_agent import AgentProcess
from tests.support.nodes import Workloads
from tests.support.operator_harness import (
    ADMIN_KEY,
    API_KEY,
    WORKSPACE,
    Emulator,
    Resources,
    ready_for_generation,
)

from deployplane.devcluster import service_account_username

# The data-plane suite's fixtures: the operator, the agent with the chart's RBAC, the
# emulator in normal mode (the data-plane extension is not in the published contract).
emulator = dataplane.emulator
agents_namespace = dataplane.agents_namespace
agent_kubeconfig = dataplane.agent_kubeconfig
operator = dataplane.operator
agent = dataplane.agent

TRACER = "tracer"
READ = ["get", "list"]
TRACER_RULES = [
    {
        "apiGroups": ["deployplane.io"],
        "resources": ["agentdeployments", "controlplaneconnections", "listeners"],
        "verbs": READ,
    },
    {"apiGroups": [""], "resources": ["configmaps", "services"], "verbs": READ},
    {"apiGroups": ["apps"], "resources": ["deployments", "statefulsets"], "verbs": READ},
    {"apiGroups": ["autoscaling"], "resources": ["horizontalpodautoscalers"], "verbs": READ},
    {"apiGroups": ["keda.sh"], "resources": ["scaledobjects"], "verbs": READ},
    {"apiGroups": ["networking.k8s.io"], "resources": ["ingresses"], "verbs": READ},
    {"apiGroups": ["gateway.networking.k8s.io"], "resources": ["httproutes"], "verbs": READ},
]


def control_plane_requests(emulator: Emulator) -> dict[str, int]:
    """The emulator's answered requests per "METHOD /route", all statuses together."""
    answer = httpx.get(
        f"{emulator.direct_url}/_emulator/stats", headers={"X-Admin-Key": ADMIN_KEY}, timeout=10
    )
    answer.raise_for_status()
    requests: dict[str, dict[str, int]] = answer.json()["requests"]
    return {route: sum(codes.values()) for route, codes in requests.items()}


def run_trace(
    emulator: Emulator, kubeconfig: Path, *args: str, columns: int = 200
) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "DEPLOYPLANE_CONTROL_PLANE_URL": emulator.url,
        "DEPLOYPLANE_API_KEY": API_KEY,
        "DEPLOYPLANE_TENANT_ID": WORKSPACE,
        "COLUMNS": str(columns),
    }
    return subprocess.run(
        [sys.executable, "-m", "deployplane.cli", "trace", *args, "--kubeconfig", str(kubeconfig)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def find(node: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    found = [node] if node["kind"] == kind else []
    for child in node["children"]:
        found += find(child, kind)
    return found


def test_trace(
    operator: Any,
    agent: AgentProcess,
    resources: Resources,
    emulator: Emulator,
    namespace: str,
    agents_namespace: str,
    k8s_api: client.ApiClient,
    dev_cluster: E2ECluster,
    service_account_client: Any,
    tmp_path: Path,
    workload_images: Workloads,
) -> None:
    resources.create(LST, listener_body(namespace, agents_namespace))
    agent.wait_running()
    image = workload_images.agent_image(1)
    resources.create(AGD, deployment_body("bot", image, agents_namespace))
    obj = resources.wait(AGD, "bot", ready_for_generation, within=180, what="Ready")
    assert obj is not None
    assert obj["status"]["revision"]["status"] == "DEPLOYED"
    cluster = Cluster(k8s_api, agents_namespace)
    wait_until("the server rolled out", lambda: cluster.rolled_out(image))
    wait_until("2 server pods ready", lambda: len(cluster.server_pods()) == 2 or None)

    service_account_client(TRACER, cluster_rules=TRACER_RULES)
    kubeconfig = dev_cluster.service_account_kubeconfig(
        namespace, TRACER, tmp_path / "tracer.kubeconfig"
    )
    agent.stop()  # its heartbeats are writes; from here on nothing else should write
    before, since = control_plane_requests(emulator), dt.datetime.now(dt.UTC)

    traced = run_trace(emulator, kubeconfig, "agd/bot", "-n", namespace, "-o", "json")
    table = run_trace(emulator, kubeconfig, "agentdeployment/bot", "-n", namespace, columns=80)
    missing = run_trace(emulator, kubeconfig, "agd", "nope", "-n", namespace)
    of_listener = run_trace(emulator, kubeconfig, "dpl/edge", "-n", namespace, "-o", "yaml")

    after = control_plane_requests(emulator)
    delta = {r: after[r] - before.get(r, 0) for r in after if after[r] != before.get(r, 0)}
    user = service_account_username(namespace, TRACER)
    print("control-plane requests during the traces:", delta)
    assert traced.returncode == 0, traced.stderr
    assert table.returncode == 0, table.stderr
    # Reads only: not one write to either API, while the reads did happen.
    assert {r: n for r, n in delta.items() if not r.startswith("GET ")} == {}
    assert delta.get("GET /v2/deployments/{deployment_id}", 0) >= 2
    # From the audit log (an existing cluster's is not ours: the test skips here).
    assert dev_cluster.count_writes(since, user=user) == {}
    reads = dev_cluster.count_requests(verbs={"get", "list"}, since=since, user=user)
    print("Kubernetes requests of the tracer:", reads)
    assert reads.get("agentdeployments", 0) >= 2
    assert reads.get("deployments", 0) >= 2

    tree = json.loads(traced.stdout)
    assert (tree["kind"], tree["name"], tree["status"]) == ("AgentDeployment", "bot", "Ready")
    [deployment] = find(tree, "Deployment")[:1]
    assert deployment["id"] == obj["status"]["deploymentId"]
    [revision] = find(tree, "Revision")
    assert revision["status"] == "DEPLOYED"
    assert revision["name"].endswith("(latest,active)")
    assert revision["id"] == obj["status"]["activeRevisionId"]
    [listener] = find(tree, "Listener")
    assert (listener["name"], listener["status"]) == (f"cluster-{namespace}", "Ready")
    [where] = find(tree, "Namespace")
    assert (where["name"], where["status"]) == (agents_namespace, "Found")
    objects = {(o["kind"], o["status"], o["reason"]) for o in where["children"]}
    assert ("Deployment", "Ready", "2/2 ready") in objects  # the agent server
    assert "StatefulSet" in {kind for kind, _, _ in objects}  # its PostgreSQL
    assert ("Service", "Ready", "ClusterIP") in objects
    assert ("Service", "Ready", "Headless") in objects  # the database's
    revision_reason = f"revision {revision['id'][:8]}"
    assert ("ConfigMap", "Applied", revision_reason) in objects  # the owner, up to date

    print(table.stdout)
    lines = table.stdout.splitlines()
    assert lines[0].split()[:2] == ["NAME", "STATUS"]
    assert all(len(line) <= 80 for line in lines)
    assert lines[1].startswith("AgentDeployment/bot")
    assert any(line.startswith("└─ Deployment/bot") for line in lines)

    assert of_listener.returncode == 0, of_listener.stderr
    listener_tree = yaml.safe_load(of_listener.stdout)
    assert (listener_tree["kind"], listener_tree["name"]) == ("Listener", "edge")
    [cp_listener] = listener_tree["children"]
    assert cp_listener["id"] == listener["id"]
    [its_namespace] = cp_listener["children"]
    assert its_namespace["name"] == agents_namespace
    assert {o["name"] for o in its_namespace["children"]} == {o["name"] for o in where["children"]}

    assert missing.returncode == 1
    assert (
        missing.stderr.strip() == f"error: agentdeployment nope not found in namespace {namespace}"
    )
    assert missing.stdout == ""
