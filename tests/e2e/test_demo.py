"""The README's main command: `deployplane demo up` (what `make demo` runs) brings every
example to Ready, works twice in a row, and `demo down` leaves no process behind."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from kubernetes import client

from deployplane.devcluster import DevCluster

REPO = Path(__file__).resolve().parents[2]


def _demo(*args: str, state: Path, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "DEPLOYPLANE_DEMO_DIR": str(state)}
    return subprocess.run(
        [sys.executable, "-m", "deployplane.cli", "demo", *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def _processes_using(state: Path) -> list[str]:
    out = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
    return [line for line in out.splitlines() if str(state) in line]


def test_demo_brings_examples_to_ready_twice_and_down_cleans_up(
    tmp_path: Path, started_cluster: DevCluster
) -> None:
    # dev_cluster only guarantees the binaries exist (skip/fail rules); the demo runs its own.
    state = tmp_path / "demo"
    try:
        for attempt in (1, 2):
            up = _demo("up", "--timeout", "180", state=state)
            assert up.returncode == 0, f"attempt {attempt}: {up.stdout[-3000:]}{up.stderr[-3000:]}"
            status = _demo("status", state=state, timeout=60)
            assert status.returncode == 0, status.stderr
            rows = json.loads(status.stdout)
            assert {r["kind"] for r in rows} == {
                "ControlPlaneConnection",
                "Listener",
                "AgentDeployment",
            }
            assert len(rows) == 4  # the `default` connection the others use
            assert all(r["ready"] == "True" for r in rows), rows
            assert all(r["revision"] == "DEPLOYED" for r in rows if r["kind"] == "AgentDeployment")
            _assert_example_agent_runs_in_agents(state)
            if attempt == 1:
                _closing_commands_run_as_printed(up.stdout)
    finally:
        down = _demo("down", state=state, timeout=120)
    assert down.returncode == 0, down.stderr
    assert _processes_using(state) == []


def _assert_example_agent_runs_in_agents(state: Path) -> None:
    """The listener agent rolled the example on the Listener out: `kubectl get deploy,pods
    -n agents` shows its agent server with every replica available."""
    cluster = DevCluster.attach(state / "cluster")
    assert cluster is not None
    with cluster.admin() as api:
        deployments = client.AppsV1Api(api).list_namespaced_deployment("agents").items
        servers = [
            d
            for d in deployments
            if d.metadata.name.startswith("support-bot-docker-")
            and d.metadata.labels.get("app.kubernetes.io/component") == "agent-server"
        ]
        assert len(servers) == 1, [d.metadata.name for d in deployments]
        (server,) = servers
        assert server.status.available_replicas == server.spec.replicas
        # The git example has no listener: the emulator's built-in data plane runs it.
        cloud = [
            d
            for d in deployments
            if d.metadata.name.startswith("support-bot-")
            and not d.metadata.name.startswith("support-bot-docker-")
            and d.metadata.labels.get("app.kubernetes.io/component") == "agent-server"
        ]
        assert len(cloud) == 1, [d.metadata.name for d in deployments]
        listener_label = "deployplane.io/listener-id"
        assert cloud[0].metadata.labels[listener_label] != server.metadata.labels[listener_label]
        pods = client.CoreV1Api(api).list_namespaced_pod("agents").items
        assert any(p.status.phase == "Running" for p in pods)


def _closing_commands_run_as_printed(stdout: str) -> None:
    """The commands `up` ends with, copied line by line from its output (80 columns, as
    a pipe gets), run in a shell: none is broken across lines, and each works."""
    commands = [
        line.strip()
        for line in stdout.splitlines()
        if line.startswith(("  export ", "  kubectl ", "  deployplane "))
    ]
    assert len(commands) == 8, stdout[-3000:]
    script = "set -e\n" + "\n".join(commands)
    done = subprocess.run(
        ["bash", "-c", script], capture_output=True, text=True, timeout=120, cwd="/"
    )
    assert done.returncode == 0, f"{script}\n{done.stdout[-2000:]}{done.stderr[-2000:]}"
    assert "support-bot" in done.stdout
    assert "agentdeployment.deployplane.io/support-bot" in done.stdout
