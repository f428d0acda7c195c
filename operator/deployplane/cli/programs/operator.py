"""`deployplane operator run`: the operator (Kopf), `deployplane.controller.run`."""

from __future__ import annotations

import click

from deployplane.cli.helptext import Group
from deployplane.cli.params import option
from deployplane.kube.paths import SHARD_LABEL

__all__ = ["operator"]

READINESS_VARIABLE = "DEPLOYPLANE_READINESS_ENDPOINT"
"""The variable `--readiness` defaults to (`deployplane.controller.config.ENV_READINESS`,
which a module this light cannot import)."""

operator = Group(name="operator", help="Run the deployplane operator.", no_args_is_help=True)


@operator.command("run")
@option(
    "--namespace",
    "-n",
    multiple=True,
    help="Watch this namespace or glob (repeatable). Default: DEPLOYPLANE_NAMESPACES, else all",
)
@option(
    "--peering",
    help="Kopf peering name for HA (two replicas, one active). Default: standalone.",
)
@option(
    "--priority",
    type=int,
    help="Peering priority: the highest live one reconciles. Default: random, so replicas "
    "started with the same arguments never tie (Kopf pauses ALL tied peers).",
)
@option(
    "--peering-lifetime",
    type=click.IntRange(min=2),
    default=60,
    help="Seconds a replica's keep-alive stays valid: how long a standby waits before "
    "taking over from a replica that died without saying so (kill -9).",
)
@option(
    "--liveness",
    help="Liveness endpoint (is the process stuck?), e.g. http://0.0.0.0:8080/healthz.",
)
@option(
    "--readiness",
    help="Readiness endpoint (can it work now: Kubernetes API and control plane), e.g. "
    f"http://0.0.0.0:8081/readyz. Default: {READINESS_VARIABLE}.",
)
@option(
    "--shard",
    help=f"Reconcile only the resources labelled {SHARD_LABEL}=NAME (and the connections "
    "so labelled); every connection is still read. Default: DEPLOYPLANE_SHARD.",
)
@option(
    "--shard-default",
    is_flag=True,
    help=f"The default instance of a sharded install: reconcile only the resources "
    f"without a {SHARD_LABEL} label. With neither this nor --shard: every resource.",
)
@option("--verbose", "-v", is_flag=True, help="Debug logging.")
@option("--json-logs", is_flag=True, help="Structured JSON logs.")
def run(
    namespace: tuple[str, ...],
    peering: str | None,
    priority: int | None,
    peering_lifetime: int,
    liveness: str | None,
    readiness: str | None,
    shard: str | None,
    shard_default: bool,
    verbose: bool,
    json_logs: bool,
) -> None:
    """Reconcile AgentDeployments, Listeners and ControlPlaneConnections with the control
    plane.

    Configured by DEPLOYPLANE_CONTROL_PLANE_URL, DEPLOYPLANE_API_KEY, DEPLOYPLANE_TENANT_ID,
    DEPLOYPLANE_NAMESPACES, DEPLOYPLANE_POLL_INTERVAL, DEPLOYPLANE_RESYNC_INTERVAL.
    """
    from deployplane.controller.run import run_operator

    run_operator(
        namespace=list(namespace),
        peering=peering,
        priority=priority,
        peering_lifetime=peering_lifetime,
        liveness=liveness,
        readiness=readiness,
        shard=shard,
        shard_default=shard_default,
        verbose=verbose,
        json_logs=json_logs,
    )
