"""The emulator's built-in data plane: `deployplane controlplane serve
--builtin-dataplane NAMESPACE` runs the deployments that have no listener.

A deployment made with no listener (`langgraph deploy`, a cloud deployment) runs on
the vendor's own compute. The emulator's stand-in for that compute is a listener agent
inside the emulator's process, one per workspace, over the same published API and
data-plane extension as any agent (on the emulator's own address, with the
workspace's first API key): it stands for the listener
`agents.builtin_listener_id(workspace)`, which no listing shows, and deploys into
NAMESPACE of the cluster of $KUBECONFIG (or the pod's own). Without a heartbeat from it
the pipeline's timers move those deployments, as before (docs/emulator.md).

The emulator says what it needs (`DataPlaneRunner`) and imports no part of the agent:
whoever starts the emulator hands it the listener agent's runner
(`deployplane.cli.programs.emulator`, with `deployplane.dataplane.builtin`).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from datetime import UTC, datetime

from deployplane.api.connection import ConnectionSettings
from deployplane.api.models import Listener
from deployplane.emulator.settings import EmulatorConfig, WorkspaceConfig
from deployplane.emulator.store.agents import builtin_listener_id
from deployplane.serving.errors import StartupError

__all__ = ["DataPlaneRunner", "builtin_listener", "run_builtin_dataplane"]

log = logging.getLogger("deployplane.builtin")

BUILTIN_COMPUTE_ID = "deployplane-builtin"

DataPlaneRunner = Callable[[Sequence[tuple[ConnectionSettings, Listener]]], Awaitable[None]]
"""Runs one listener agent for each (connection, listener it stands for) until
cancelled; `serving.errors.StartupError` when it cannot start (one line)."""


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


async def run_builtin_dataplane(
    config: EmulatorConfig, url: str, namespace: str, runner: DataPlaneRunner
) -> None:
    """Runs one agent per workspace with an API key until cancelled, through `runner`;
    `StartupError` when there is no workspace to serve, or the agents cannot start."""
    served = [w for w in config.workspaces if w.api_keys]
    if not served:
        raise StartupError("--builtin-dataplane: no workspace has an API key to run as")
    placements = [
        (ConnectionSettings(url=url, api_key=w.api_keys[0]), builtin_listener(w, namespace))
        for w in served
    ]
    log.info("built-in data plane: %d workspace(s) into namespace %s", len(served), namespace)
    await runner(placements)
