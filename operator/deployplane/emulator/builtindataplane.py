"""The emulator's built-in data plane: `deployplane controlplane serve
--builtin-dataplane NAMESPACE` runs the deployments that have no listener.

A deployment made with no listener (`langgraph deploy`, a cloud deployment) runs on
the vendor's own compute. The emulator's stand-in for that compute is a listener agent
(`dataplane.agent.Agent`) inside the emulator's process, one per workspace, over the
same published API and data-plane extension as any agent (on the emulator's own
address, with the workspace's first API key): it stands for the listener
`agents.builtin_listener_id(workspace)`, which no listing shows, and deploys into
NAMESPACE of the cluster of $KUBECONFIG (or the pod's own). Without a heartbeat from it
the pipeline's timers move those deployments, as before (docs/emulator.md).
"""

from __future__ import annotations

import asyncio
import logging
import os
from datetime import UTC, datetime

from deployplane.api.connection import ConnectionSettings
from deployplane.api.models import Listener
from deployplane.emulator.settings import EmulatorConfig, WorkspaceConfig
from deployplane.emulator.store.agents import builtin_listener_id

__all__ = ["BuiltinError", "builtin_listener", "run_builtin_dataplane"]

log = logging.getLogger("deployplane.builtin")

BUILTIN_COMPUTE_ID = "deployplane-builtin"


class BuiltinError(Exception):
    """The built-in data plane cannot start: one line for the user."""


def builtin_listener(workspace: WorkspaceConfig, namespace: str) -> Listener:
    """The listener the built-in agent of `workspace` stands for: its deployments go to
    `namespace` (the one it allows)."""
    epoch = datetime(2026, 1, 1, tzinfo=UTC)
    return Listener.model_validate(
        {
            "id": str(builtin_listener_id(workspace.id)),
            "compute_type": "k8s",
            "compute_id": BUILTIN_COMPUTE_ID,
            "compute_config": {"k8s_namespaces": [namespace]},
            "created_at": epoch,
            "updated_at": epoch,
        }
    )


async def run_builtin_dataplane(config: EmulatorConfig, url: str, namespace: str) -> None:
    """Runs one agent per workspace with an API key until cancelled; `BuiltinError`
    when there is no cluster configuration or no workspace to serve."""
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
        raise BuiltinError(f"--builtin-dataplane: {exc}") from None
    except ConfigException:
        raise BuiltinError(
            "--builtin-dataplane needs a cluster: set KUBECONFIG, or run in a pod"
        ) from None
    assert isinstance(cluster, ClusterApi)
    served = [w for w in config.workspaces if w.api_keys]
    if not served:
        raise BuiltinError("--builtin-dataplane: no workspace has an API key to run as")
    clients = [
        ConnectionSettings(url=url, api_key=w.api_keys[0]).client(DataPlaneClient) for w in served
    ]
    agents = [
        Agent(
            client=client,
            cluster=cluster,
            listener_id=builtin_listener_id(workspace.id),
            settings=AgentSettings(dataplane=dataplane),
            builtin=builtin_listener(workspace, namespace),
        )
        for workspace, client in zip(served, clients, strict=True)
    ]
    log.info("built-in data plane: %d workspace(s) into namespace %s", len(agents), namespace)
    try:
        await asyncio.gather(*(agent.run() for agent in agents))
    finally:
        for client in clients:
            await client.aclose()
        await cluster.aclose()
