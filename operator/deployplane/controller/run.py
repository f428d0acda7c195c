"""`deployplane operator run`: start the operator (Kopf) in this process (its command
line: `deployplane.cli.programs.operator`)."""

from __future__ import annotations

import os
import secrets

import click

from deployplane.controller.config import ENV_READINESS, OperatorConfig
from deployplane.controller.sharding import ShardError, Sharding
from deployplane.serving.config import ConfigError, Endpoint


def run_operator(
    *,
    namespace: list[str],
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
    """Run the operator with the options of `deployplane operator run`
    (`deployplane.cli.programs.operator`, where each is described)."""
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
        click.echo(f"error: {exc}", err=True)
        raise click.exceptions.Exit(2) from None
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
