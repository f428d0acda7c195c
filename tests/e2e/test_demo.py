"""The README's main command: `deployplane demo up` (what `make demo` runs) brings every
example to Ready, works twice in a row, and `demo down` leaves no process behind. On the
running demo: the commands it ends with, and every `kubectl`/`deployplane` command of
README.md's and docs/install.md's shell blocks (tests/support/doccommands.py), run as
printed; its operator reconciles a resource applied without `-n` (in `default`)."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

from kubernetes import client
from tests.support.demorun import REPO, demo, demo_shell, processes_using
from tests.support.doccommands import doc_commands, why_not_on_the_demo

from deployplane.devcluster import DevCluster


def test_demo_brings_examples_to_ready_twice_and_down_cleans_up(
    tmp_path: Path, started_cluster: DevCluster
) -> None:
    # dev_cluster only guarantees the binaries exist (skip/fail rules); the demo runs its own.
    state = tmp_path / "demo"
    try:
        for attempt in (1, 2):
            up = demo("up", "--timeout", "180", state=state)
            assert up.returncode == 0, f"attempt {attempt}: {up.stdout[-3000:]}{up.stderr[-3000:]}"
            status = demo("status", state=state, timeout=60)
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
                began = time.monotonic()
                _doc_commands_run_on_the_demo(state)
                _a_resource_in_any_namespace_is_reconciled(state)
                print(f"docs' commands and a resource in default: {time.monotonic() - began:.1f} s")
    finally:
        down = demo("down", state=state, timeout=120)
    assert down.returncode == 0, down.stderr
    assert processes_using(state) == []


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


def _doc_commands_run_on_the_demo(state: Path) -> None:
    """Each command the docs give, copied as written, from the repository's root (they
    name `examples/...`): every one succeeds, or its rule says why it cannot run here."""
    env = demo_shell(state)
    ran = []
    for command in doc_commands(REPO):
        why = why_not_on_the_demo(command)
        if why is not None:
            print(f"not on the demo ({why}): {command}")
            continue
        done = subprocess.run(
            ["bash", "-o", "pipefail", "-c", command.text],
            capture_output=True,
            text=True,
            timeout=120,
            cwd=REPO,
            env=env,
        )
        assert done.returncode == 0, f"{command}\n{done.stdout[-2000:]}{done.stderr[-2000:]}"
        ran.append(command)
    assert ran, "no command of the docs ran"
    print(f"{len(ran)} commands of the docs ran on the demo")


STRAY = """\
apiVersion: deployplane.io/v1alpha1
kind: AgentDeployment
metadata:
  name: stray-bot
spec:
  source: external_docker
  sourceRevisionConfig:
    imageUri: registry.example.com/acme/stray-bot:1
"""


def _a_resource_in_any_namespace_is_reconciled(state: Path) -> None:
    """Applied without `-n` (into `default`, which has no connection of its own): the
    operator watches every namespace and reconciles it with its own connection (the
    emulator's built-in data plane runs it), and its log said what it watches."""
    env = demo_shell(state)

    def kubectl(*args: str, stdin: str | None = None) -> str:
        done = subprocess.run(
            ["kubectl", *args], input=stdin, capture_output=True, text=True, timeout=200, env=env
        )
        assert done.returncode == 0, f"kubectl {' '.join(args)}: {done.stderr[-2000:]}"
        return done.stdout

    kubectl("apply", "-f", "-", stdin=STRAY)
    try:
        kubectl("wait", "--for=condition=Ready", "agentdeployment/stray-bot", "--timeout=180s")
    finally:
        kubectl("delete", "agentdeployment", "stray-bot", "--timeout=120s")
    log = (state / "operator.log").read_text(errors="replace")
    assert "watching every namespace (cluster-wide)" in log
