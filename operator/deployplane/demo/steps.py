"""The demo's steps shared by both of its ways (`demo up`, and `demo up --real-node`):
its state directory and names, the processes it starts and stops by pid file, the
emulator on the host, and the CRDs and examples applied."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import click
import yaml
from kubernetes import client

from deployplane.devcluster.cluster import DevCluster
from deployplane.devcluster.manifests import Applier

STATE = Path(os.environ.get("DEPLOYPLANE_DEMO_DIR", ".deployplane/demo"))
NAMESPACE = "demo"
DEMO_API_KEY = "demo-key-not-secret"  # matches examples/controlplane.yaml; local only
TENANT = "11111111-1111-1111-1111-111111111111"
# The example Listener (examples/listener.yaml) and its namespace, where its agent
# deploys: `kubectl get deploy,pods -n agents` shows the example agents running.
LISTENER = "dev-cluster"
AGENTS_NAMESPACE = "agents"


def repo_file(relative: str) -> Path:
    path = Path.cwd() / relative
    if not path.exists():
        raise click.BadParameter(f"{relative} not found: run the demo from the repository root")
    return path


# ------------------------------------------------------------------- processes


def spawn(name: str, args: list[str], env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    log = (STATE / f"{name}.log").open("a")
    proc = subprocess.Popen(
        args,
        stdout=subprocess.PIPE if name == "emulator" else log,
        stderr=log,
        text=True,
        env={**os.environ, **(env or {})},
        start_new_session=True,  # survives this command; stopped by `down` or Ctrl-C
    )
    (STATE / f"{name}.pid").write_text(str(proc.pid))
    return proc


def cli_command(*args: str) -> list[str]:
    """A `deployplane` command run by this interpreter (the demo's own installation)."""
    return [sys.executable, "-m", "deployplane.cli", *args]


def stop_pidfile(name: str) -> None:
    pidfile = STATE / f"{name}.pid"
    if not pidfile.exists():
        return
    pid = int(pidfile.read_text())
    for sig, wait in ((signal.SIGTERM, 10.0), (signal.SIGKILL, 5.0)):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, sig)
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                pidfile.unlink(missing_ok=True)
                return
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, os.WNOHANG)
            time.sleep(0.1)
    pidfile.unlink(missing_ok=True)


def start_emulator(
    cluster: DevCluster,
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    config: Path | None = None,
    env: dict[str, str] | None = None,
) -> str:
    """The emulator on `host`:`port` (0: a free port; config: examples/controlplane.yaml),
    with its built-in data plane running the deployments that have no listener
    (`langgraph deploy`'s) in the agents' namespace of the demo's cluster (`env`:
    KUBECONFIG and more for it)."""
    proc = spawn(
        "emulator",
        cli_command(
            "controlplane",
            "serve",
            "--host",
            host,
            "--port",
            str(port),
            "--config",
            str(config or repo_file("examples/controlplane.yaml")),
            "--database",
            f"sqlite+aiosqlite:///{STATE.resolve()}/controlplane.db",
            "--builtin-dataplane",
            AGENTS_NAMESPACE,
        ),
        env=env or {"KUBECONFIG": str(cluster.kubeconfig)},
    )
    assert proc.stdout is not None
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            raise RuntimeError(f"the emulator exited; see {STATE / 'emulator.log'}")
        if "listening on" in line:
            url = line.rsplit(" ", 1)[-1].strip()
            (STATE / "emulator.url").write_text(url)
            # Its later output is not needed; close our end so it never blocks on a pipe.
            proc.stdout.close()
            return url
    raise RuntimeError("the emulator did not start within 60 s")


# ------------------------------------------------------------------- resources


def apply_examples(
    api: client.ApiClient, kinds: frozenset[str], control_plane_url: str = ""
) -> None:
    """CRDs, namespaces and the examples of `kinds`; the example ControlPlaneConnection
    points at `control_plane_url` (the local emulator)."""
    applier = Applier(api)
    crds = [
        yaml.safe_load(p.read_text())
        for p in sorted(repo_file("crds").glob("*.deployplane.io.yaml"))
    ]
    applier.apply(crds)
    for namespace in (NAMESPACE, AGENTS_NAMESPACE):
        applier.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
    docs: list[dict[str, Any]] = []
    for path in sorted(repo_file("examples").glob("*.yaml")):
        docs += [
            d
            for d in yaml.safe_load_all(path.read_text())
            if d and "kind" in d and "apiVersion" in d
        ]
    for doc in docs:
        if doc.get("kind") == "ControlPlaneConnection":
            doc["spec"]["url"] = control_plane_url
    applier.apply([d for d in docs if d.get("kind") in kinds], namespace=NAMESPACE)
