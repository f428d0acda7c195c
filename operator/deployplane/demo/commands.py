"""`deployplane demo up|down`: the whole system on one machine, in one command.

`up` starts a local Kubernetes API (etcd + kube-apiserver + kube-controller-manager),
the control-plane emulator, the operator and the listener agent of the example Listener
(the data plane: it rolls the example deployments out in namespace `agents`), applies
the CRDs and `examples/`, and shows a live table until every example is Ready
(`--real-node`: the same on a real node, the operator and agent as pods:
realnode.py; `--gitops`: the AgentDeployments through Argo CD: gitops.py).
Everything keeps running in the background afterwards (`down` stops it). Ctrl-C during
`up` stops everything it started. The command line: `deployplane.cli.programs.demo`.
"""

from __future__ import annotations

import json
import shlex
import shutil
import signal
import sys
import time
from pathlib import Path

import click
from rich.console import Console
from rich.live import Live

from deployplane.api.connection import ENV_API_KEY, ENV_URL
from deployplane.demo import gitops as gitops_demo
from deployplane.demo import realnode, table
from deployplane.demo.steps import (
    AGENTS_NAMESPACE,
    DEMO_API_KEY,
    LISTENER,
    NAMESPACE,
    STATE,
    TENANT,
    apply_examples,
    cli_command,
    spawn,
    start_emulator,
    stop_pidfile,
)
from deployplane.devcluster.cluster import DevCluster, DevClusterError
from deployplane.devcluster.tools import ToolsNotFound

console = Console()


def _control_plane_env(cluster: DevCluster, url: str) -> dict[str, str]:
    """What the operator and the listener agent need: the cluster and the emulator."""
    return {
        "KUBECONFIG": str(cluster.kubeconfig),
        "DEPLOYPLANE_CONTROL_PLANE_URL": url,
        "DEPLOYPLANE_API_KEY": DEMO_API_KEY,
        "DEPLOYPLANE_TENANT_ID": TENANT,
        "DEPLOYPLANE_POLL_INTERVAL": "1",
    }


def _stop_all() -> None:
    stop_pidfile("listener-agent")
    stop_pidfile("operator")
    stop_pidfile("emulator")
    cluster = DevCluster.attach(STATE / "cluster")
    if cluster is not None:
        cluster.stop()


# --------------------------------------------------------------------- commands


def up(*, timeout: float, real_node: bool, gitops: bool) -> None:
    """`demo up` (`deployplane.cli.programs.demo`, where its options are described)."""
    if real_node and gitops:
        raise click.BadParameter("--gitops runs on the kwok demo, not with --real-node")
    if STATE.exists():
        console.print("[dim]stopping the previous demo first[/dim]")
        _stop_all()
        shutil.rmtree(STATE, ignore_errors=True)
    STATE.mkdir(parents=True)
    started = time.monotonic()
    try:
        cluster = realnode.start(STATE, console, NAMESPACE) if real_node else _start_local(gitops)
        all_ready = _watch(cluster, timeout, started)
    except KeyboardInterrupt:
        console.print("\ninterrupted: stopping everything the demo started")
        # A second Ctrl-C (impatient users, or a signal sent to the whole process group)
        # must not abandon the clean-up half-way and leave servers behind.
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        _stop_all()
        raise click.exceptions.Exit(130) from None
    except (DevClusterError, ToolsNotFound, RuntimeError) as exc:
        console.print(f"[red]error:[/red] {exc}")
        _stop_all()
        raise click.exceptions.Exit(1) from None
    _print_next_steps(cluster)
    if not all_ready:
        console.print(
            f"[red]not every example became Ready within {timeout:.0f}s[/red]; "
            f"see {STATE / 'operator.log'}"
        )
        raise click.exceptions.Exit(1)


def _start_local(gitops: bool = False) -> DevCluster:
    if gitops:
        gitops_demo.check_ports()
    with console.status("starting the local Kubernetes API (etcd + kube-apiserver)..."):
        cluster = DevCluster(
            STATE / "cluster", detached=True, workloads=True, gitops=gitops,
            git_port=gitops_demo.GIT_PORT if gitops else 0,
        )  # fmt: skip
        cluster.start()
    console.print(f"[green]✓[/green] Kubernetes API at {cluster.server}")
    with console.status("starting the control-plane emulator..."):
        url = start_emulator(cluster, port=gitops_demo.EMULATOR_PORT if gitops else 0)
    console.print(f"[green]✓[/green] control-plane emulator at {url}")
    with console.status("applying CRDs and examples/..."), cluster.admin() as api:
        apply_examples(api, frozenset({"Secret", "ControlPlaneConnection", "Listener"}), url)
    console.print(
        f"[green]✓[/green] CRDs, the example connection and Listener applied in {NAMESPACE}"
    )
    env = _control_plane_env(cluster, url)
    # Every namespace, as the chart installs it by default: a resource applied without
    # `-n` (in `default`) is reconciled too, with the operator's own connection.
    spawn("operator", cli_command("operator", "run"), env=env)
    console.print(
        f"[green]✓[/green] operator started, watching every namespace (log: "
        f"{STATE / 'operator.log'})"
    )
    _start_listener_agent(cluster, url)
    # Deployments only once the agent runs: before it, the emulator would deploy a
    # revision on its timers, as for a listener without an agent.
    with cluster.admin() as api:
        if gitops:
            repo_url = gitops_demo.sync_examples(cluster, api, NAMESPACE)
            console.print(f"[green]✓[/green] example AgentDeployments pushed to {repo_url}")
            for line in gitops_demo.next_steps(cluster, repo_url):
                console.print(f"  {line}", soft_wrap=True, markup=False, highlight=False)
            return cluster
        apply_examples(api, frozenset({"AgentDeployment"}))
    console.print(f"[green]✓[/green] example AgentDeployments applied in {NAMESPACE}")
    return cluster


def _start_listener_agent(cluster: DevCluster, url: str) -> None:
    """The data plane of the example Listener; it learns the listener's id from the
    Listener's status once the operator has created it."""
    spawn(
        "listener-agent",
        cli_command("listener", "run", "--listener", LISTENER, "--namespace", NAMESPACE),
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
            rows = table.rows(api, NAMESPACE)
            live.update(table.table(rows, NAMESPACE, time.monotonic() - started, console.width))
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


def down() -> None:
    """Stop the operator, the emulator and the cluster, and remove the demo's state."""
    if not STATE.exists():
        console.print("no demo is running")
        return
    _stop_all()
    shutil.rmtree(STATE, ignore_errors=True)
    console.print("demo stopped")


def status() -> None:
    """Print the demo's resources as JSON (for scripts)."""
    cluster = DevCluster.attach(STATE / "cluster")
    if cluster is None or not cluster.ready():
        console.print("no demo is running")
        raise click.exceptions.Exit(1)
    with cluster.admin() as api:
        print(json.dumps(table.rows(api, NAMESPACE), indent=2))
