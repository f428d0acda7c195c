"""`deployplane operator run`: start the operator (Kopf) in this process."""

from __future__ import annotations

import os
import secrets

import typer

from deployplane.controller.config import ENV_READINESS, ConfigError, Endpoint, OperatorConfig
from deployplane.controller.sharding import SHARD_LABEL, ShardError, Sharding

app = typer.Typer(no_args_is_help=True)

SHARD_OPTION = typer.Option(
    None,
    "--shard",
    help=f"Reconcile only the resources labelled {SHARD_LABEL}=NAME (and the connections "
    "so labelled); every connection is still read. Default: DEPLOYPLANE_SHARD.",
)
SHARD_DEFAULT_OPTION = typer.Option(
    False,
    "--shard-default",
    help=f"The default instance of a sharded install: reconcile only the resources "
    f"without a {SHARD_LABEL} label. With neither this nor --shard: every resource.",
)


LIVENESS_OPTION = typer.Option(
    None,
    "--liveness",
    help="Liveness endpoint (is the process stuck?), e.g. http://0.0.0.0:8080/healthz.",
)
READINESS_OPTION = typer.Option(
    None,
    "--readiness",
    help="Readiness endpoint (can it work now: Kubernetes API and control plane), e.g. "
    f"http://0.0.0.0:8081/readyz. Default: {ENV_READINESS}.",
)


@app.command("run")
def run(
    namespace: list[str] = typer.Option(
        [],
        "--namespace",
        "-n",
        help="Watch this namespace or glob (repeatable). Default: DEPLOYPLANE_NAMESPACES, else all",
    ),
    peering: str | None = typer.Option(
        None,
        "--peering",
        help="Kopf peering name for HA (two replicas, one active). Default: standalone.",
    ),
    priority: int | None = typer.Option(
        None,
        "--priority",
        help="Peering priority: the highest live one reconciles. Default: random, so "
        "replicas started with the same arguments never tie (Kopf pauses ALL tied peers).",
    ),
    peering_lifetime: int = typer.Option(
        60,
        "--peering-lifetime",
        min=2,
        help="Seconds a replica's keep-alive stays valid: how long a standby waits "
        "before taking over from a replica that died without saying so (kill -9).",
    ),
    liveness: str | None = LIVENESS_OPTION,
    readiness: str | None = READINESS_OPTION,
    shard: str | None = SHARD_OPTION,
    shard_default: bool = SHARD_DEFAULT_OPTION,
    verbose: bool = typer.Option(False, "--verbose", "-v", help="Debug logging."),
    json_logs: bool = typer.Option(False, "--json-logs", help="Structured JSON logs."),
) -> None:
    """Reconcile AgentDeployment and Listener resources against the control plane.

    Configured by DEPLOYPLANE_CONTROL_PLANE_URL, DEPLOYPLANE_API_KEY, DEPLOYPLANE_TENANT_ID,
    DEPLOYPLANE_NAMESPACES, DEPLOYPLANE_POLL_INTERVAL, DEPLOYPLANE_RESYNC_INTERVAL.
    """
    namespaces = _configure(list(namespace), readiness, shard, shard_default)
    _run_kopf(
        namespaces=namespaces,
        peering=peering,
        priority=secrets.randbelow(2**31 - 1) + 1 if priority is None else priority,
        peering_lifetime=peering_lifetime,
        liveness=liveness,
        verbose=verbose,
        json_logs=json_logs,
    )


def _configure(
    namespace: list[str], readiness: str | None, shard: str | None, shard_default: bool
) -> list[str]:
    """Checks the options and the environment, hands the start-up handlers what they
    read from the environment, and returns the namespaces Kopf watches; a bad value is
    a one-line error (exit 2)."""
    try:
        if readiness is not None:
            Endpoint.parse(readiness, "--readiness")
            os.environ[ENV_READINESS] = readiness  # the start-up handler serves it
        config = OperatorConfig.from_env()
        sharding = Sharding.from_env()
        if shard is not None or shard_default:
            sharding = Sharding(shard=shard, default=shard_default)
    except (ConfigError, ShardError) as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
    # The handlers read it when imported (their filters) and at start-up (the watch's).
    os.environ.update(sharding.to_env())
    namespaces = namespace or list(config.namespaces)
    # What Kopf watches, for the start-up log line (`--namespace` wins over the variable).
    os.environ["DEPLOYPLANE_NAMESPACES"] = ",".join(namespaces)
    return namespaces


def _run_kopf(
    *,
    namespaces: list[str],
    peering: str | None,
    priority: int,
    peering_lifetime: int,
    liveness: str | None,
    verbose: bool,
    json_logs: bool,
) -> None:
    # Kopf and the handlers are imported here, not with the CLI: `deployplane --help`
    # and the other commands need neither.
    import kopf

    import deployplane.controller.handlers  # noqa: F401  (registers the handlers)

    kopf.configure(
        verbose=verbose, log_format=kopf.LogFormat.JSON if json_logs else kopf.LogFormat.PLAIN
    )
    settings = kopf.OperatorSettings()
    settings.peering.lifetime = peering_lifetime
    kopf.run(
        settings=settings,
        # Kopf watches these (globs allowed: Kopf follows namespaces created later).
        priority=priority,
        clusterwide=not namespaces,
        namespaces=namespaces,
        standalone=peering is None,
        peering_name=peering,
        liveness_endpoint=liveness,
    )
