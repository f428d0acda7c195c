"""The README's main command: `deployplane demo up` (what `make demo` runs) brings every
example to Ready, works twice in a row, and `demo down` leaves no process behind. On the
running demo: the commands it ends with, and every `kubectl`/`deployplane` command of
README.md's and docs/install.md's shell blocks (tests/support/doccommands.py), run as
printed; its operator reconciles a resource applied without `-n` (in `default`).

The second `up` is `make demo GITOPS=1`'s (`--gitops`) when the GitOps tools are built
(always in `make test`; skipped elsewhere without them, failed under CI=true): its
examples reach Ready through Argo CD, and docs/gitops.md's commands run on it as written,
in one shell from a root laid out as the repository's (examples/gitops/ applied as it
is, a repository pushed, Argo CD and Flux syncing it, a sync and a reconcile asked for).
Its fixed ports are held by a machine-wide lock meanwhile."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from kubernetes import client
from tests.support.doccommands import (
    doc_commands,
    gitops_doc_commands,
    why_not_on_the_demo,
    why_not_on_the_gitops_demo,
)
from tests.support.gitops import gitops_demo_ports, gitops_demo_tools

from deployplane.api.connection import ENV_API_KEY, ENV_URL
from deployplane.demo.steps import DEMO_API_KEY
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
    gitops = gitops_demo_tools()
    with contextlib.ExitStack() as held:
        try:
            for attempt in (1, 2):
                with_gitops = attempt == 2 and gitops is None
                if with_gitops:
                    held.enter_context(gitops_demo_ports())
                _up_and_check(state, attempt, with_gitops, tmp_path)
        finally:
            down = _demo("down", state=state, timeout=120)
    assert down.returncode == 0, down.stderr
    assert _processes_using(state) == []
    if gitops is not None:
        pytest.skip(f"the demo ran without --gitops: {gitops}")


def _up_and_check(state: Path, attempt: int, gitops: bool, tmp_path: Path) -> None:
    up = _demo("up", "--timeout", "180", *(["--gitops"] if gitops else []), state=state)
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
    began = time.monotonic()
    if attempt == 1:
        _closing_commands_run_as_printed(up.stdout)
        _doc_commands_run_on_the_demo(state)
        _a_resource_in_any_namespace_is_reconciled(state)
        print(f"docs' commands and a resource in default: {time.monotonic() - began:.1f} s")
    if gitops:
        _gitops_doc_commands_run_on_the_demo(state, tmp_path / "root")
        print(f"docs/gitops.md's commands: {time.monotonic() - began:.1f} s")


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


def _demo_shell(state: Path) -> dict[str, str]:
    """The environment of a shell set up as `up`'s closing lines set it."""
    cluster = DevCluster.attach(state / "cluster")
    assert cluster is not None
    kubectl = cluster.tools.kubectl
    assert kubectl is not None
    bins = f"{kubectl.absolute().parent}:{Path(sys.executable).parent}"
    return {
        **os.environ,
        "KUBECONFIG": str(cluster.kubeconfig.absolute()),
        "PATH": f"{bins}:{os.environ['PATH']}",
        ENV_URL: (state / "emulator.url").read_text().strip(),
        ENV_API_KEY: DEMO_API_KEY,
    }


def _doc_commands_run_on_the_demo(state: Path) -> None:
    """Each command the docs give, copied as written, from the repository's root (they
    name `examples/...`): every one succeeds, or its rule says why it cannot run here."""
    env = _demo_shell(state)
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


def _gitops_doc_commands_run_on_the_demo(state: Path, root: Path) -> None:
    """docs/gitops.md's commands, as written and in order, in one bash (they build on
    each other: a working copy, variables), from a directory laid out as the repository's
    root whose `.deployplane/demo` is this demo's state; each but those its rules leave
    out. The docs' own `kubectl wait`s assert what they promise."""
    root.mkdir()
    for name in ("examples", "charts", "tools", ".venv"):
        (root / name).symlink_to(REPO / name)
    (root / ".deployplane").mkdir()
    (root / ".deployplane" / "demo").symlink_to(state)
    lines = ["set -eo pipefail"]
    ran = 0
    for command in gitops_doc_commands(REPO):
        why = why_not_on_the_gitops_demo(command)
        if why is not None:
            print(f"not on the GitOps demo ({why}): {command}")
            continue
        lines += [f"echo {json.dumps(f'### {command.doc}:{command.line}')} >&2", command.text]
        ran += 1
    # A user's git knows who commits; the test's is told.
    identity = {
        f"GIT_{who}_{what}": value
        for who in ("AUTHOR", "COMMITTER")
        for what, value in (("NAME", "docs"), ("EMAIL", "docs@deployplane.invalid"))
    }
    # Neither the demo's cluster nor our programs: the docs' own lines put them there.
    ours = {str(Path(sys.executable).parent), _demo_shell(state)["PATH"].split(os.pathsep)[0]}
    env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
    env["PATH"] = os.pathsep.join(d for d in env["PATH"].split(os.pathsep) if d not in ours)
    done = subprocess.run(
        ["bash", "-c", "\n".join(lines)],
        capture_output=True,
        text=True,
        timeout=900,
        cwd=root,
        env={**env, **identity},
    )
    assert done.returncode == 0, f"{done.stdout[-3000:]}\n{done.stderr[-4000:]}"
    assert ran > 10, ran
    print(f"{ran} commands of docs/gitops.md ran on the GitOps demo")


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
    env = _demo_shell(state)

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
