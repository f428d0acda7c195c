"""`deployplane listener run`: the listener agent, in the cluster its listener stands for.

Which listener: `--listener-id` (DEPLOYPLANE_LISTENER_ID) or `--listener NAME`
(DEPLOYPLANE_LISTENER_NAME) of a Listener resource whose status has the id, in
`--namespace` (DEPLOYPLANE_LISTENER_NAMESPACE, default `default`). Configured like the
operator (the control plane's URL, API key, tenant; the poll and resync intervals) and
by what it renders (PostgreSQL's and Redis's images, the autoscaler, routing, the NetworkPolicy,
Pod Security):
each an option and its DEPLOYPLANE_* variable (`deployplane.dataplane.options`), so
`--help` documents them all. Its command line: `deployplane.cli.programs.agent`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import sys
from collections.abc import Coroutine, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NoReturn
from uuid import UUID

import click

from deployplane.api.errors import ControlPlaneError, NotFound, Unauthorized
from deployplane.dataplane import options
from deployplane.serving.config import ConfigError, Endpoint, ServingConfig
from deployplane.serving.errors import StartupError

if TYPE_CHECKING:  # imported when run: the kubernetes client is slow to import
    from deployplane.dataplane.protocol import DataPlaneClient
    from deployplane.dataplane.render.settings import DataPlaneSettings
    from deployplane.kube.api import KubernetesApi

log = logging.getLogger("deployplane.dataplane")


@dataclass(frozen=True)
class ProbeEndpoints:
    """Where the agent serves its probes (`deployplane.dataplane.probes`); None: not."""

    liveness: Endpoint | None = None
    readiness: Endpoint | None = None

    @classmethod
    def parse(cls, liveness: str | None, readiness: str | None) -> ProbeEndpoints:
        return cls(
            None if liveness is None else Endpoint.parse(liveness, "--liveness"),
            None if readiness is None else Endpoint.parse(readiness, "--readiness"),
        )


def run_agent(
    *,
    listener_id: str | None,
    listener: str | None,
    namespace: str,
    verbose: bool,
    liveness: str | None,
    readiness: str | None,
    settings: Mapping[str, Any],
) -> None:
    """Run the agent of one listener (the options of `deployplane listener run`,
    `deployplane.cli.programs.agent`); `settings`: each of `options.SETTINGS` by name,
    as click read it from its option, else its variable."""
    env = options.environment(settings)
    logging.basicConfig(
        level=logging.DEBUG if verbose else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    if (listener_id is None) == (listener is None):
        _fail("give exactly one of --listener-id and --listener")
    config, dataplane = _settings(env)
    try:
        endpoints = ProbeEndpoints.parse(liveness, readiness)
    except ConfigError as exc:
        _fail(str(exc))
    try:
        asyncio.run(_main(config, listener_id, listener, namespace, dataplane, endpoints))
    except StartupError as exc:
        _fail(str(exc))


def _settings(env: dict[str, str]) -> tuple[ServingConfig, DataPlaneSettings]:
    """The connection and intervals, and what the agent renders; a bad one is one line
    naming its option and variable."""
    from deployplane.dataplane.render.settings import SettingsError, from_env

    try:
        config = ServingConfig.from_env(env)
        if not config.control_plane_url:
            raise ConfigError("DEPLOYPLANE_CONTROL_PLANE_URL is not set")
        return config, from_env(env)
    except (ConfigError, SettingsError) as exc:
        _fail(options.naming_options(str(exc)))


def _fail(message: str) -> NoReturn:
    click.echo(f"error: {message}", err=True)
    raise click.exceptions.Exit(2)


async def _main(
    config: ServingConfig,
    listener_id: str | None,
    name: str | None,
    namespace: str,
    dataplane: DataPlaneSettings,
    endpoints: ProbeEndpoints,
) -> None:
    from kubernetes.config import ConfigException

    from deployplane.dataplane.agent import Agent, AgentSettings
    from deployplane.dataplane.kube import ClusterApi
    from deployplane.dataplane.probes import AgentProbes
    from deployplane.dataplane.protocol import DataPlaneClient

    lid = None if listener_id is None else _parse_id(listener_id)
    try:
        cluster = ClusterApi.from_environment()
    except ConfigException:
        raise StartupError("no Kubernetes configuration: run in a pod, or set KUBECONFIG") from None
    assert isinstance(cluster, ClusterApi)  # from_environment builds its own class
    connection = config.default_connection()
    assert connection is not None  # checked before the agent starts
    client = connection.client(DataPlaneClient)
    probes = AgentProbes.build(
        cluster, connection, config.unhealthy_after, readiness=endpoints.readiness is not None
    )
    try:
        await probes.serve(endpoints.liveness, endpoints.readiness)
        if lid is None:
            assert name is not None
            found = await _listener_id_of(cluster, namespace, name, config.poll_interval)
            lid = _parse_id(found)
        await _check(client, lid)
        agent = Agent(
            client=client,
            cluster=cluster,
            listener_id=lid,
            settings=AgentSettings(
                poll_interval=config.poll_interval,
                resync_interval=config.resync_interval,
                dataplane=dataplane,
            ),
        )
        probes.agent = agent
        log.info("listener agent running for listener %s", lid)
        await _until_signalled(agent.run())
    finally:
        await probes.aclose()
        await client.aclose()
        await cluster.aclose()


def _parse_id(raw: str) -> UUID:
    try:
        return UUID(raw)
    except ValueError:
        raise StartupError(f"listener id {raw!r} is not a UUID") from None


async def _listener_id_of(
    cluster: KubernetesApi, namespace: str, name: str, interval: float
) -> str:
    """The id in the Listener resource's status, waiting for the operator to set it."""
    from kubernetes.client.exceptions import ApiException

    while True:
        try:
            status = await cluster.read_custom_status(namespace, "listeners", name)
        except ApiException as exc:
            raise StartupError(
                f"cannot read Listener {namespace}/{name}: {exc.status} {exc.reason}"
            ) from None
        listener_id = (status or {}).get("listenerId")
        if listener_id:
            return str(listener_id)
        log.info("waiting for Listener %s/%s to have status.listenerId", namespace, name)
        await asyncio.sleep(interval)


async def _check(client: DataPlaneClient, listener_id: UUID) -> None:
    """One clear line for the mistakes a user can make, before the loop starts."""
    try:
        await client.get_listener(listener_id)
    except NotFound:
        raise StartupError(f"listener {listener_id} not found in this workspace") from None
    except Unauthorized:
        raise StartupError("the control plane refused the API key") from None
    except ControlPlaneError as exc:
        raise StartupError(f"cannot reach the control plane: {exc}") from None
    try:
        await client.heartbeat(listener_id)
    except NotFound:
        raise StartupError(
            "the control plane does not serve the data-plane extension "
            "(/_dataplane/v1): run the emulator without strict mode"
        ) from None


async def _until_signalled(work: Coroutine[Any, Any, None]) -> None:
    """Runs until SIGTERM/SIGINT, then cancels the agent cleanly."""
    task = asyncio.ensure_future(work)
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, task.cancel)
    with contextlib.suppress(asyncio.CancelledError):
        await task
