"""`deployplane dev cluster up|down|status|kubeconfig`: a local Kubernetes API.

`up` starts etcd, kube-apiserver and kube-controller-manager detached from the CLI (they
keep running after it exits), waits until the apiserver is ready and records the pids
in the state directory; `down` stops them and removes the files they wrote. With
`--real-node` one real node runs beside them (realnode/); `load-image` imports image
archives into it. With `--gitops`, Argo CD, Flux and a git server run beside them
(gitops/); `gitops.json` in the state directory says where. The command line, with
each option described: `deployplane.cli.programs.devcluster`.
"""

from __future__ import annotations

import time
from pathlib import Path

import click

from deployplane.devcluster import gitops
from deployplane.devcluster.cluster import DevCluster, DevClusterError
from deployplane.devcluster.realnode import images as node_images
from deployplane.devcluster.tools import ToolsNotFound
from deployplane.devcluster.workloads import DEFAULT_NODES


def _print_kubeconfig(cluster: DevCluster) -> None:
    click.echo(f"kubeconfig: {cluster.kubeconfig}")
    click.echo(f"export KUBECONFIG={cluster.kubeconfig}")


def up(
    *,
    state_dir: Path,
    controller_manager: bool,
    audit: bool,
    workloads: bool,
    real_node: bool,
    nodes: int | None,
    with_gitops: bool,
    timeout: float,
) -> None:
    """Start the cluster in the background and return once it is ready. `nodes`: the
    kwok nodes asked for; None, not asked: `DEFAULT_NODES`, none with a real node."""
    existing = DevCluster.attach(state_dir)
    if existing is not None and existing.ready():
        _already_running(existing, with_gitops)
        return
    started = time.monotonic()
    cluster = DevCluster(
        state_dir,
        controller_manager=controller_manager,
        workloads=workloads,
        audit_log=audit,
        detached=True,
        ready_timeout=timeout,
        real_node=real_node,
        nodes=(0 if real_node else DEFAULT_NODES) if nodes is None else nodes,
        gitops=with_gitops,
    )
    try:
        cluster.start()
    except (DevClusterError, ToolsNotFound) as e:
        click.echo(f"error: {e}", err=True)
        raise click.exceptions.Exit(1) from e
    click.echo(f"dev cluster ready at {cluster.server} in {time.monotonic() - started:.1f}s")
    _print_gitops(cluster.state_dir)
    _print_kubeconfig(cluster)


def _already_running(existing: DevCluster, with_gitops: bool) -> None:
    if with_gitops and gitops.read_info(existing.state_dir) is None:
        # Argo CD and Flux are not added to a running cluster: they start with it.
        click.echo(
            f"error: the dev cluster at {existing.server} runs without --gitops: "
            "`deployplane dev cluster down`, then `up --gitops`",
            err=True,
        )
        raise click.exceptions.Exit(1)
    click.echo(f"dev cluster already running at {existing.server}")
    _print_gitops(existing.state_dir)
    _print_kubeconfig(existing)


def _print_gitops(state_dir: Path) -> None:
    info = gitops.read_info(state_dir)
    if info is None:
        return
    click.echo(f"git server: {info.git_url}/<name>.git serves {info.git_root}/<name>.git")
    click.echo(
        f"Argo CD in namespace {info.argocd_namespace}, Flux in {info.flux_namespace} "
        f"({state_dir / gitops.INFO_FILE})"
    )


def down(state_dir: Path) -> None:
    """Stop the cluster and remove its state (certificates, data, logs)."""
    cluster = DevCluster.attach(state_dir)
    if cluster is None:
        click.echo(f"no dev cluster recorded in {state_dir}")
        return
    cluster.stop()
    if cluster.node_leftovers:
        click.echo(f"error: left behind: {', '.join(cluster.node_leftovers)}", err=True)
        raise click.exceptions.Exit(1)
    click.echo("dev cluster stopped")


def load_image(archives: list[Path], state_dir: Path) -> None:
    """Import image archives into the real node's containerd (like `kind load image-archive`)."""
    cluster = DevCluster.attach(state_dir)
    if cluster is None or not cluster.settings.real_node:
        click.echo(
            f"no dev cluster with a real node in {state_dir}; run `up --real-node`", err=True
        )
        raise click.exceptions.Exit(1)
    try:
        names = node_images.load(cluster.server_processes, cluster.tools.bin_dir, archives)
    except (DevClusterError, ToolsNotFound) as e:
        click.echo(f"error: {e}", err=True)
        raise click.exceptions.Exit(1) from e
    for name in names:
        click.echo(f"loaded {name}")


def kubeconfig(state_dir: Path) -> None:
    """Print the admin kubeconfig path (e.g. `export KUBECONFIG=$(... kubeconfig)`)."""
    cluster = DevCluster.attach(state_dir)
    if cluster is None:
        click.echo(f"no dev cluster in {state_dir}; run `deployplane dev cluster up`", err=True)
        raise click.exceptions.Exit(1)
    click.echo(str(cluster.kubeconfig))


def status(state_dir: Path) -> None:
    """Say whether the cluster runs and is ready; exit 1 when it is not."""
    cluster = DevCluster.attach(state_dir)
    if cluster is None:
        click.echo(f"no dev cluster in {state_dir}")
        raise click.exceptions.Exit(1)
    for proc in cluster.server_processes:
        click.echo(f"{proc.name:<24} pid {proc.pid:<8} {'running' if proc.alive() else 'gone'}")
    if not cluster.ready():
        click.echo(f"not ready ({cluster.server})")
        raise click.exceptions.Exit(1)
    click.echo(f"ready at {cluster.server}")
    _print_gitops(state_dir)
    _print_kubeconfig(cluster)
