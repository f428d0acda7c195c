"""`deployplane dev cluster up|down|load-image|kubeconfig|status`: a local Kubernetes
API, `deployplane.devcluster.cli`."""

from __future__ import annotations

import click

from deployplane.cli.helptext import Group
from deployplane.cli.params import argument, option

__all__ = ["dev"]

dev = Group(
    name="dev", help="Local development cluster (kube-apiserver + etcd).", no_args_is_help=True
)
cluster = Group(
    name="cluster", help="Start, stop and locate the dev cluster.", no_args_is_help=True
)
dev.add_command(cluster)

KWOK_NODES = 3
"""`--kwok-nodes`' default (`deployplane.devcluster.workloads.DEFAULT_NODES`, which a
module this light cannot import)."""

state_dir_option = option(
    "--state-dir",
    type=click.Path(file_okay=False),
    default=".deployplane/cluster",
    envvar="DEPLOYPLANE_DEV_STATE_DIR",
    help="Where the pids, certificates, data and kubeconfig live.",
)


@cluster.command("up")
@state_dir_option
@option(
    "--controller-manager/--no-controller-manager",
    default=True,
    help="Run kube-controller-manager (namespace deletion, garbage collection).",
)
@option("--audit/--no-audit", default=False, help="Write an audit log (state-dir/audit.log).")
@option(
    "--workloads/--no-workloads",
    default=False,
    help="Also run kube-scheduler and kwok with fake nodes, so pods run.",
)
@option(
    "--real-node",
    is_flag=True,
    help="Also run one real node (kubelet, containerd, kube-proxy in a sandbox; root).",
)
@option(
    "--kwok-nodes",
    "nodes",
    type=click.IntRange(min=0),
    default=KWOK_NODES,
    help="Fake kwok nodes (with --real-node: none unless given).",
)
@option(
    "--gitops",
    "with_gitops",
    is_flag=True,
    help="Also run Argo CD, Flux and a git server on 127.0.0.1 (state-dir/gitops.json).",
)
@option(
    "--timeout",
    type=float,
    default=60.0,
    help="Seconds to wait for readiness (then as long again for --gitops).",
)
def up(
    state_dir: str,
    controller_manager: bool,
    audit: bool,
    workloads: bool,
    real_node: bool,
    nodes: int,
    with_gitops: bool,
    timeout: float,
) -> None:
    """Start the cluster in the background; return once ready."""
    from pathlib import Path

    from deployplane.devcluster import cli

    given = click.get_current_context().get_parameter_source("nodes")
    cli.up(
        state_dir=Path(state_dir),
        controller_manager=controller_manager,
        audit=audit,
        workloads=workloads,
        real_node=real_node,
        nodes=None if given is click.core.ParameterSource.DEFAULT else nodes,
        with_gitops=with_gitops,
        timeout=timeout,
    )


@cluster.command("down")
@state_dir_option
def down(state_dir: str) -> None:
    """Stop the cluster and remove its state.

    Its certificates, data and logs."""
    from pathlib import Path

    from deployplane.devcluster import cli

    cli.down(Path(state_dir))


@cluster.command("load-image")
@argument(
    "archives",
    nargs=-1,
    required=True,
    type=click.Path(),
    help="OCI or docker image archives (.tar).",
)
@state_dir_option
def load_image(archives: tuple[str, ...], state_dir: str) -> None:
    """Import image archives into the real node.

    Into its containerd, as `kind load image-archive` does."""
    from pathlib import Path

    from deployplane.devcluster import cli

    cli.load_image([Path(a) for a in archives], Path(state_dir))


@cluster.command("kubeconfig")
@state_dir_option
def kubeconfig(state_dir: str) -> None:
    """Print the admin kubeconfig path.

    For `export KUBECONFIG=$(deployplane dev cluster kubeconfig)`."""
    from pathlib import Path

    from deployplane.devcluster import cli

    cli.kubeconfig(Path(state_dir))


@cluster.command("status")
@state_dir_option
def status(state_dir: str) -> None:
    """Say whether the cluster runs and is ready.

    Exit 1 when it is not."""
    from pathlib import Path

    from deployplane.devcluster import cli

    cli.status(Path(state_dir))
