"""The listener agents the emulator runs as its built-in data plane (`deployplane
controlplane serve --builtin-dataplane`, `deployplane.emulator.builtindataplane`): one
agent per (connection, listener it stands for), into the cluster of $KUBECONFIG (or the
pod's own), configured by the same DEPLOYPLANE_* variables as any agent's rendering.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Sequence

from deployplane.api.connection import ConnectionSettings
from deployplane.api.models import Listener
from deployplane.serving.errors import StartupError

__all__ = ["run_builtin_agents"]


async def run_builtin_agents(placements: Sequence[tuple[ConnectionSettings, Listener]]) -> None:
    """Runs until cancelled; `StartupError` when there is no cluster configuration or a
    rendering setting is wrong."""
    # Imported here: the agent's Kubernetes client is slow to import, and only this
    # mode of the emulator needs it.
    from kubernetes.config import ConfigException

    from deployplane.dataplane.agent import Agent, AgentSettings
    from deployplane.dataplane.kube import ClusterApi
    from deployplane.dataplane.protocol import DataPlaneClient
    from deployplane.dataplane.render.settings import SettingsError, from_env

    try:
        dataplane = from_env(os.environ)
        cluster = ClusterApi.from_environment()
    except SettingsError as exc:
        raise StartupError(f"--builtin-dataplane: {exc}") from None
    except ConfigException:
        raise StartupError(
            "--builtin-dataplane needs a cluster: set KUBECONFIG, or run in a pod"
        ) from None
    assert isinstance(cluster, ClusterApi)
    clients = [connection.client(DataPlaneClient) for connection, _ in placements]
    agents = [
        Agent(
            client=client,
            cluster=cluster,
            listener_id=listener.id,
            settings=AgentSettings(dataplane=dataplane),
            builtin=listener,
        )
        for client, (_, listener) in zip(clients, placements, strict=True)
    ]
    try:
        await asyncio.gather(*(agent.run() for agent in agents))
    finally:
        for client in clients:
            await client.aclose()
        await cluster.aclose()
