"""`deployplane demo up|down`: the whole system on one machine, in one command.

`up` starts a local Kubernetes API (etcd + kube-apiserver + kube-controller-manager),
the control-plane emulator, the operator and the listener agent of the example Listener
(the data plane: it rolls the example deployments out in namespace `agents`), applies
the CRDs and `examples/`, and shows a live table until every example is Ready
(`--real-node`: the same on a real node, the operator and agent as pods:
demo_realnode.py; `--gitops`: the AgentDeployments through Argo CD: demo_gitops.py).
Everything keeps running in the background afterwards (`down` stops it). Ctrl-C during
`up` stops everything it started.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import typer
import yaml
from kubernetes import client
from rich.console import Console
from rich.live import Live

from deployplane import demo_gitops, demo_realnode, demo_table
from deployplane.api.connection import ENV_API_KEY, ENV_URL
from deployplane.devcluster.cluster import DevCluster, DevClusterError
from deployplane.devcluster.manifests import Applier
from deployplane.devcluster.tools import ToolsNotFound

app = typer.Typer(no_args_is_help=True, help="The local demo: cluster, emulator, operator.")
console = Console()

STATE = Path(os.environ.get("DEPLOYPLANE_DEMO_DIR", ".deployplane/demo"))
NAMESPACE = "demo"
DEMO_API_KEY = "demo-key-not-secret"  # matches examples/controlplane.yaml; local only
TENANT = "11111111-1111-1111-1111-111111111111"
# The example Listener (examples/listener.yaml) and its namespace, where its agent
# deploys: `kubectl get deploy,pods -n agents` shows the example agents running.
LISTENER = "dev-cluster"
AGENTS_NAMESPACE = "agents"


def _repo_file(relative: str) -> Path:
    path = Path.cwd() / relative
    if not path.exists():
        raise typer.BadParameter(f"{relative} not found: run the demo from the repository root")
    return path


# ------------------------------------------------------------------- processes


def _spawn(name: str, args: list[str], env: dict[str, str] | None = None) -> subprocess.Popen[str]:
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


def _cli(*args: str) -> list[str]:
    """A `deployplane` command run by this interpreter (the demo's own installation)."""
    return [sys.executable, "-m", "deployplane.cli", *args]


def _control_plane_env(cluster: DevCluster, url: str) -> dict[str, str]:
    """What the operator and the listener agent need: the cluster and the emulator."""
    return {
        "KUBECONFIG": str(cluster.kubeconfig),
        "DEPLOYPLANE_CONTROL_PLANE_URL": url,
        "DEPLOYPLANE_API_KEY": DEMO_API_KEY,
        "DEPLOYPLANE_TENANT_ID": TENANT,
        "DEPLOYPLANE_POLL_INTERVAL": "1",
    }


def _stop_pidfile(name: str) -> None:
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


def _start_emulator(
    cluster: DevCluster,
    *,
    host: str = "127.0.0.1",
    config: Path | None = None,
    env: dict[str, str] | None = None,
) -> str:
    """The emulator on `host` (config: examples/controlplane.yaml), with its built-in
    data plane running the deployments that have no listener (`langgraph deploy`'s) in
    the agents' namespace of the demo's cluster (`env`: KUBECONFIG and more for it)."""
    proc = _spawn(
        "emulator",
        _cli(
            "controlplane",
            "serve",
            "--host",
            host,
            "--port",
            "0",
            "--config",
            str(config or _repo_file("examples/controlplane.yaml")),
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


def _stop_all() -> None:
    _stop_pidfile("listener-agent")
    _stop_pidfile("operator")
    _stop_pidfile("emulator")
    cluster = DevCluster.attach(STATE / "cluster")
    if cluster is not None:
        cluster.stop()


# ------------------------------------------------------------------- resources


def _apply_examples(
    api: client.ApiClient, kinds: frozenset[str], control_plane_url: str = ""
) -> None:
    """CRDs, namespaces and the examples of `kinds`; the example ControlPlaneConnection
    points at `control_plane_url` (the local emulator)."""
    applier = Applier(api)
    crds = [
        yaml.safe_load(p.read_text())
        for p in sorted(_repo_file("crds").glob("*.deployplane.io.yaml"))
    ]
    applier.apply(crds)
    for namespace in (NAMESPACE, AGENTS_NAMESPACE):
        applier.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
    docs: list[dict[str, Any]] = []
    for path in sorted(_repo_file("examples").glob("*.yaml")):
        docs += [
            d
            for d in yaml.safe_load_all(path.read_text())
            if d and "kind" in d and "apiVersion" in d
        ]
    for doc in docs:
        if doc.get("kind") == "ControlPlaneConnection":
            doc["spec"]["url"] = control_plane_url
    applier.apply([d for d in docs if d.get("kind") in kinds], namespace=NAMESPACE)


# --------------------------------------------------------------------- commands


@app.command()
def up(
    timeout: float = typer.Option(300.0, help="Seconds to wait for every example to be Ready."),
    real_node: bool = typer.Option(False, "--real-node", help=demo_realnode.HELP),
    gitops: bool = typer.Option(False, "--gitops", help=demo_gitops.HELP),
) -> None:
    """Start everything, apply examples/, show them until Ready."""
    if real_node and gitops:
        raise typer.BadParameter("--gitops runs on the kwok demo, not with --real-node")
    if STATE.exists():
        console.print("[dim]stopping the previous demo first[/dim]")
        _stop_all()
        shutil.rmtree(STATE, ignore_errors=True)
    STATE.mkdir(parents=True)
    started = time.monotonic()
    try:
        if real_node:
            cluster = demo_realnode.start(
                STATE, console, _apply_examples, _start_emulator, NAMESPACE
            )
        else:
            cluster = _start_local(gitops)
        all_ready = _watch(cluster, timeout, started)
    except KeyboardInterrupt:
        console.print("\ninterrupted: stopping everything the demo started")
        # A second Ctrl-C (impatient users, or a signal sent to the whole process group)
        # must not abandon the clean-up half-way and leave servers behind.
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        _stop_all()
        raise typer.Exit(130) from None
    except (DevClusterError, ToolsNotFound, RuntimeError) as exc:
        console.print(f"[red]error:[/red] {exc}")
        _stop_all()
        raise typer.Exit(1) from None
    _print_next_steps(cluster)
    if not all_ready:
        console.print(
            f"[red]not every example became Ready within {timeout:.0f}s[/red]; "
            f"see {STATE / 'operator.log'}"
        )
        raise typer.Exit(1)


def _start_local(gitops: bool = False) -> DevCluster:
    with console.status("starting the local Kubernetes API (etcd + kube-apiserver)..."):
        cluster = DevCluster(STATE / "cluster", detached=True, workloads=True, gitops=gitops)
        cluster.start()
    console.print(f"[green]✓[/green] Kubernetes API at {cluster.server}")
    with console.status("starting the control-plane emulator..."):
        url = _start_emulator(cluster)
    console.print(f"[green]✓[/green] control-plane emulator at {url}")
    with console.status("applying CRDs and examples/..."), cluster.admin() as api:
        _apply_examples(api, frozenset({"Secret", "ControlPlaneConnection", "Listener"}), url)
    console.print(
        f"[green]✓[/green] CRDs, the example connection and Listener applied in {NAMESPACE}"
    )
    env = _control_plane_env(cluster, url)
    # Every namespace, as the chart installs it by default: a resource applied without
    # `-n` (in `default`) is reconciled too, with the operator's own connection.
    _spawn("operator", _cli("operator", "run"), env=env)
    console.print(
        f"[green]✓[/green] operator started, watching every namespace (log: "
        f"{STATE / 'operator.log'})"
    )
    _start_listener_agent(cluster, url)
    # Deployments only once the agent runs: before it, the emulator would deploy a
    # revision on its timers, as for a listener without an agent.
    with cluster.admin() as api:
        if gitops:
            repo_url = demo_gitops.sync_examples(cluster, api, NAMESPACE)
            console.print(f"[green]✓[/green] example AgentDeployments pushed to {repo_url}")
            for line in demo_gitops.next_steps(cluster, repo_url):
                console.print(f"  {line}", soft_wrap=True, markup=False, highlight=False)
            return cluster
        _apply_examples(api, frozenset({"AgentDeployment"}))
    console.print(f"[green]✓[/green] example AgentDeployments applied in {NAMESPACE}")
    return cluster


def _start_listener_agent(cluster: DevCluster, url: str) -> None:
    """The data plane of the example Listener; it learns the listener's id from the
    Listener's status once the operator has created it."""
    _spawn(
        "listener-agent",
        _cli("listener", "run", "--listener", LISTENER, "--namespace", NAMESPACE),
        env=_control_plane_env(cluster, url),
    )
    log = STATE / "listener-agent.log"
    with console.status(f"waiting for the listener agent of {LISTENER}..."):
        deadline = time.monotonic() + 120
        while "listener agent running" not in log.read_text(errors="replace"):
            if time.monotonic() > deadline:
                raise RuntimeError(f"the listener agent did not start; see {log}")
            time.sleep(0.2)
    console.print(
        f"[green]✓[/green] listener agent of {LISTENER} running, deploying into namespace "
        f"{AGENTS_NAMESPACE} (log: {log})"
    )


def _watch(cluster: DevCluster, timeout: float, started: float) -> bool:
    deadline = time.monotonic() + timeout
    with cluster.admin() as api, Live(console=console, refresh_per_second=4) as live:
        while True:
            rows = demo_table.rows(api, NAMESPACE)
            live.update(
                demo_table.table(rows, NAMESPACE, time.monotonic() - started, console.width)
            )
            if rows and all(r["ready"] == "True" for r in rows):
                return True
            if time.monotonic() > deadline:
                return False
            time.sleep(0.5)


def _print_next_steps(cluster: DevCluster) -> None:
    """The commands to go on with, each whole on its line: printed without wrapping (a
    terminal may fold a long one on screen, but copies it as one line), kubectl and
    deployplane by name once the first lines have put them on PATH."""
    console.print("\n[bold]Everything is running in the background.[/bold] In a shell:")
    for line in next_steps(cluster.kubeconfig, cluster.tools.kubectl, STATE):
        console.print(f"  {line}", soft_wrap=True, markup=False, highlight=False)
    console.print("Stop it all with: make demo-down   (or: deployplane demo down)", soft_wrap=True)


def next_steps(kubeconfig: Path, kubectl: Path | None, state: Path) -> list[str]:
    """The shell lines `up` ends with (absolute paths: they work from any directory)."""
    bins = [str(Path(sys.executable).parent)]  # deployplane, as the demo runs it
    if kubectl is not None:
        bins.insert(0, str(kubectl.absolute().parent))
    url_file = shlex.quote(str((state / "emulator.url").absolute()))
    return [
        f"export KUBECONFIG={shlex.quote(str(kubeconfig.absolute()))}",
        f'export PATH="{":".join(bins)}:$PATH"',
        f"kubectl get agentdeployments,listeners -n {NAMESPACE} -o wide",
        f"kubectl describe agentdeployment support-bot -n {NAMESPACE}",
        f"kubectl get deploy,pods -n {AGENTS_NAMESPACE}   # the example agents, running",
        f"export {ENV_URL}=$(cat {url_file})",
        f"export {ENV_API_KEY}={DEMO_API_KEY}",
        "deployplane deployments list",
    ]


@app.command()
def down() -> None:
    """Stop the operator, the emulator and the cluster, and remove the demo's state."""
    if not STATE.exists():
        console.print("no demo is running")
        return
    _stop_all()
    shutil.rmtree(STATE, ignore_errors=True)
    console.print("demo stopped")


@app.command()
def status() -> None:
    """Print the demo's resources as JSON (for scripts)."""
    cluster = DevCluster.attach(STATE / "cluster")
    if cluster is None or not cluster.ready():
        console.print("no demo is running")
        raise typer.Exit(1)
    with cluster.admin() as api:
        print(json.dumps(demo_table.rows(api, NAMESPACE), indent=2))
