"""`deployplane dev cluster up|down|status|kubeconfig`: a local Kubernetes API.

`up` starts etcd, kube-apiserver and kube-controller-manager detached from the CLI (they
keep running after it exits), waits until the apiserver is ready and records the pids
in the state directory; `down` stops them and removes the files they wrote. With
`--real-node` one real node runs beside them (realnode/); `load-image` imports image
archives into it. With `--gitops`, Argo CD, Flux and a git server run beside them
(gitops/); `gitops.json` in the state directory says where.
"""

from __future__ import annotations

import time
from pathlib import Path

import click
import typer

from deployplane.devcluster import gitops
from deployplane.devcluster.cluster import DevCluster, DevClusterError
from deployplane.devcluster.realnode import images as node_images
from deployplane.devcluster.tools import ToolsNotFound
from deployplane.devcluster.workloads import DEFAULT_NODES

app = typer.Typer(no_args_is_help=True)
cluster_app = typer.Typer(no_args_is_help=True, help="Start, stop and locate the dev cluster.")
app.add_typer(cluster_app, name="cluster")

DEFAULT_STATE_DIR = Path(".deployplane/cluster")
StateDir = typer.Option(
    DEFAULT_STATE_DIR,
    "--state-dir",
    envvar="DEPLOYPLANE_DEV_STATE_DIR",
    help="Where the pids, certificates, data and kubeconfig live.",
)


def _print_kubeconfig(cluster: DevCluster) -> None:
    typer.echo(f"kubeconfig: {cluster.kubeconfig}")
    typer.echo(f"export KUBECONFIG={cluster.kubeconfig}")


def _defaulted(ctx: typer.Context, name: str) -> bool:
    """The option was not given: its value is its default."""
    return ctx.get_parameter_source(name) is click.core.ParameterSource.DEFAULT


@cluster_app.command()
def up(
    ctx: typer.Context,
    state_dir: Path = StateDir,
    controller_manager: bool = typer.Option(
        True, help="Run kube-controller-manager (namespace deletion, garbage collection)."
    ),
    audit: bool = typer.Option(False, help="Write an audit log (state-dir/audit.log)."),
    workloads: bool = typer.Option(
        False, help="Also run kube-scheduler and kwok with fake nodes, so pods run."
    ),
    real_node: bool = typer.Option(
        False,
        "--real-node",
        help="Also run one real node (kubelet, containerd, kube-proxy in a sandbox; root).",
    ),
    nodes: int = typer.Option(
        DEFAULT_NODES,
        "--kwok-nodes",
        min=0,
        help="Fake kwok nodes (with --real-node: none unless given).",
    ),
    with_gitops: bool = typer.Option(
        False,
        "--gitops",
        help="Also run Argo CD, Flux and a git server on 127.0.0.1 (state-dir/gitops.json).",
    ),
    timeout: float = typer.Option(
        60.0, help="Seconds to wait for readiness (then as long again for --gitops)."
    ),
) -> None:
    """Start the cluster in the background and return once it is ready."""
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
        nodes=0 if real_node and _defaulted(ctx, "nodes") else nodes,
        gitops=with_gitops,
    )
    try:
        cluster.start()
    except (DevClusterError, ToolsNotFound) as e:
        typer.echo(f"error: {e}", err=True)
        raise typer.Exit(1) from e
    typer.echo(f"dev cluster ready at {cluster.server} in {time.monotonic() - started:.1f}s")
    _print_gitops(cluster.state_dir)
    _print_kubeconfig(cluster)


def _already_running(existing: DevCluster, with_gitops: bool) -> None:
    if with_gitops and gitops.read_info(existing.state_dir) is None:
        # Argo CD and Flux are not added to a running cluster: they start with it.
        typer.echo(
            f"error: the dev cluster at {existing.server} runs without --gitops: "
            "`deployplane dev cluster down`, then `up --gitops`",
            err=True,
        )
        raise typer.Exit(1)
    typer.echo(f"dev cluster already running at {existing.server}")
    _print_gitops(existing.state_dir)
    _print_kubeconfig(existing)


def _print_gitops(state_dir: Path) -> None:
    info = gitops.read_info(state_dir)
    if info is None:
        return
    typer.echo(f"git server: {info.git_url}/<name>.git serves {info.git_root}/<name>.git")
    typer.echo(
        f"Argo CD in namespace {info.argocd_namespace}, Flux in {info.flux_namespace} "
        f"({state_dir / gitops.INFO_FILE})"
    )


@cluster_app.command()
def down(state_dir: Path = StateDir) -> None:
    """Stop the cluster and remove its state (certificates, data, logs)."""
    cluster = DevCluster.attach(state_dir)
    if cluster is None:
        typer.echo(f"no dev cluster recorded in {state_dir}")
        return
    cluster.stop()
    if cluster.node_leftovers:
        typer.echo(f"error: left behind: {', '.join(cluster.node_leftovers)}", err=True)
        raise typer.Exit(1)
    typer.echo("dev cluster stopped")


@cluster_app.command("load-image")
def load_image(
    archives: list[Path] = typer.Argument(..., help="OCI or docker image archives (.tar)."),
    state_dir: Path = StateDir,
) -> None:
    """Import image archives into the real node's containerd (like `kind load image-archive`)."""
    cluster = DevCluster.attach(state_dir)
    if cluster is None or not cluster.settings.real_node:
        typer.echo(
            f"no dev cluster with a real node in {state_dir}; run `up --real-node`", err=True
        )
        raise typer.Exit(1)
    try:
        names = node_images.load(cluster.server_processes, cluster.tools.bin_dir, archives)
    except (DevClusterError, ToolsNotFound) as e:
        typer.echo(f"error: {e}", err=True)
        raise typer.Exit(1) from e
    for name in names:
        typer.echo(f"loaded {name}")


@cluster_app.command()
def kubeconfig(state_dir: Path = StateDir) -> None:
    """Print the admin kubeconfig path (e.g. `export KUBECONFIG=$(... kubeconfig)`)."""
    cluster = DevCluster.attach(state_dir)
    if cluster is None:
        typer.echo(f"no dev cluster in {state_dir}; run `deployplane dev cluster up`", err=True)
        raise typer.Exit(1)
    typer.echo(str(cluster.kubeconfig))


@cluster_app.command()
def status(state_dir: Path = StateDir) -> None:
    """Say whether the cluster runs and is ready; exit 1 when it is not."""
    cluster = DevCluster.attach(state_dir)
    if cluster is None:
        typer.echo(f"no dev cluster in {state_dir}")
        raise typer.Exit(1)
    for proc in cluster.server_processes:
        typer.echo(f"{proc.name:<24} pid {proc.pid:<8} {'running' if proc.alive() else 'gone'}")
    if not cluster.ready():
        typer.echo(f"not ready ({cluster.server})")
        raise typer.Exit(1)
    typer.echo(f"ready at {cluster.server}")
    _print_gitops(state_dir)
    _print_kubeconfig(cluster)


if __name__ == "__main__":  # pragma: no cover
    app()
