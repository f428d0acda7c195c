"""`make demo REAL_NODE=1` (`deployplane demo up --real-node`): the README's demo on a real
node, in the real-node tier. It starts its own dev cluster with the one real node of
this machine, so the tier runs this module first (RUN_FIRST, tests/e2e/conftest.py),
before `real_node_session` starts the tier's node (it asks for no cluster fixture).

The examples Ready, the AgentDeployments DEPLOYED; the operator and listener agent are
pods of the built image on the node, the emulator a process on the host listening on
the host's end of the node's veth; the examples' workloads real containers in
`agents`: the Listener's example by the listener agent, the git example (no listener)
by the emulator's built-in data plane, its agent server Ready. Then the user's flow
(issue 37 item 6): a tiny graph deployed by the vendor's `langgraph deploy --remote`
to the demo's emulator (its URL in `emulator.url`, the demo's key) is DEPLOYED, a real
image built and run on the node, and the vendor's SDK (`runs.wait`) through
`deployplane deployments port-forward` gets the graph's output. `demo down` leaves no
process behind and the host's network and mounts as they were.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from kubernetes import client
from tests.support import hostsnapshot, langgraph_app, polling, realnode

from deployplane.api.dataplane import LABEL_DEPLOYMENT_ID, LABEL_LISTENER_ID
from deployplane.dataplane.kube import FIELD_MANAGER
from deployplane.dataplane.render.context import LABEL_COMPONENT, SERVER
from deployplane.demo import realnode as demo_realnode
from deployplane.demo import steps
from deployplane.devcluster import DevCluster
from deployplane.emulator.store.agents import builtin_listener_id
from deployplane.emulator.store.dataplane import BUILT_IMAGE_REGISTRY

REPO = Path(__file__).resolve().parents[2]
APP = "demo-graph"
# The emulator's built-in data plane stands for this listener in the demo's workspace.
BUILTIN_LISTENER = str(builtin_listener_id(uuid.UUID(steps.TENANT)))
pytestmark = pytest.mark.skipif(
    realnode.skip_reason() is not None, reason=str(realnode.skip_reason())
)
RUN_FIRST = True  # before the tier's own real node starts: one real node per machine


def _demo(*args: str, state: Path, timeout: float) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "DEPLOYPLANE_DEMO_DIR": str(state)}
    argv = [sys.executable, "-m", "deployplane.cli", "demo", *args]
    return subprocess.run(
        argv, cwd=REPO, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )


def _processes_using(state: Path) -> list[str]:
    out = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
    return [line for line in out.splitlines() if str(state) in line]


def test_demo_on_the_real_node_serves_langgraph_deploy_and_down_cleans_up(
    tmp_path: Path,
) -> None:
    state = tmp_path / "demo"
    before = hostsnapshot.snapshot(state / "cluster")
    try:
        up = _demo("up", "--real-node", "--timeout", "240", state=state, timeout=600)
        assert up.returncode == 0, f"{up.stdout[-3000:]}{up.stderr[-3000:]}"
        rows = json.loads(_demo("status", state=state, timeout=60).stdout)
        assert len(rows) == 4, rows
        assert all(r["ready"] == "True" for r in rows), rows
        assert all(r["revision"] == "DEPLOYED" for r in rows if r["kind"] == "AgentDeployment")
        _assert_the_emulator_is_a_host_process(state)
        _assert_pods_on_the_real_node(state)
        _assert_langgraph_deploy_runs_the_graph(state, tmp_path / "app")
    finally:
        down = _demo("down", state=state, timeout=300)
    assert down.returncode == 0, down.stdout + down.stderr
    assert _processes_using(state) == []
    assert hostsnapshot.snapshot(state / "cluster") == before


def _assert_the_emulator_is_a_host_process(state: Path) -> None:
    pid = int((state / "emulator.pid").read_text())
    args = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    assert {b"controlplane", b"serve"} <= set(args), args
    url = (state / "emulator.url").read_text().strip()
    assert url.startswith(f"http://{demo_realnode.EMULATOR_HOST}:"), url


def _assert_langgraph_deploy_runs_the_graph(state: Path, project: Path) -> None:
    """`langgraph deploy --remote` to the demo's emulator, as the README shows: DEPLOYED
    (a real image, built and imported into the node, runs in `agents`), and the graph
    answers through `deployplane deployments port-forward` with the vendor's SDK."""
    url = (state / "emulator.url").read_text().strip()
    langgraph_app.write_project(project, "!", "second")
    done, took = langgraph_app.deploy(url, steps.DEMO_API_KEY, project, APP)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Deployment successful!" in done.stdout
    print(f"langgraph deploy -> DEPLOYED {took:.1f} s")
    deployment = langgraph_app.deployment_id(done.stdout)
    cluster = DevCluster.attach(state / "cluster")
    assert cluster is not None
    with cluster.admin() as api:
        selector = f"{LABEL_DEPLOYMENT_ID}={deployment},{LABEL_COMPONENT}={SERVER}"
        pods = client.CoreV1Api(api).list_namespaced_pod("agents", label_selector=selector)
        assert pods.items, "no agent-server pod of the deployed graph"
        for pod in pods.items:
            assert pod.spec.node_name == "deployplane-node", pod.metadata.name
            (image,) = {c.image for c in pod.spec.containers}
            assert image.startswith("localhost/deployplane-agent:"), image
    with langgraph_app.port_forward(url, steps.DEMO_API_KEY, APP, cluster.kubeconfig) as local:
        output, first_wait = langgraph_app.run_graph(local, "hi")
        assert output == {"text": "HI!", "steps": ["first", "second"]}
    print(f"first runs.wait through port-forward {first_wait:.2f} s")


def _assert_pods_on_the_real_node(state: Path) -> None:
    cluster = DevCluster.attach(state / "cluster")
    assert cluster is not None
    with cluster.admin() as api:
        core = client.CoreV1Api(api)
        servers = core.list_namespaced_pod(demo_realnode.RELEASE_NAMESPACE).items
        components = {p.metadata.labels["app.kubernetes.io/component"] for p in servers}
        assert components == {"operator", "listener-agent"}, components
        workloads = core.list_namespaced_pod("agents").items
        (example,) = demo_realnode.STAND_INS
        images = {c.image for p in workloads for c in p.spec.containers}
        (built,) = {i for i in images if i.startswith(f"{BUILT_IMAGE_REGISTRY}/support-bot:")}
        assert images == {example, built, realnode.POSTGRES_IMAGE, realnode.REDIS_IMAGE}, images
        for pod in [*servers, *workloads]:
            assert pod.spec.node_name == "deployplane-node", pod.metadata.name
        polling.wait_until(  # PostgreSQL's pod may still be starting: DEPLOYED needs not it
            "every pod Running",
            lambda: all(
                p.status.phase == "Running"
                for ns in (demo_realnode.RELEASE_NAMESPACE, "agents")
                for p in core.list_namespaced_pod(ns).items
            ),
        )
        _assert_the_builtin_data_plane_runs_the_git_example(api, built)


def _assert_the_builtin_data_plane_runs_the_git_example(api: client.ApiClient, built: str) -> None:
    """The git example (no listener) is the built-in agent's: its objects carry the
    built-in listener's id, written by the agent's field manager, and its agent server
    runs the image of the simulated build, Ready (its /ok probe answered)."""
    core, apps = client.CoreV1Api(api), client.AppsV1Api(api)
    selector = f"{LABEL_LISTENER_ID}={BUILTIN_LISTENER},{LABEL_COMPONENT}={SERVER}"
    (server,) = apps.list_namespaced_deployment("agents", label_selector=selector).items
    assert FIELD_MANAGER in {m.manager for m in server.metadata.managed_fields}
    assert {c.image for c in server.spec.template.spec.containers} == {built}
    pods = core.list_namespaced_pod("agents", label_selector=selector).items
    assert pods, "no agent-server pod of the built-in data plane"
    for pod in pods:
        assert pod.spec.node_name == "deployplane-node", pod.metadata.name
        ready = {c.type: c.status for c in pod.status.conditions or []}
        assert pod.status.phase == "Running", pod.status
        assert ready.get("Ready") == "True", pod.status
