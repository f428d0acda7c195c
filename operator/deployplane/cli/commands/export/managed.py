"""Which deployments an AgentDeployment already manages, from the custom resources the
cluster holds: pure functions.

An AgentDeployment manages a deployment when it records the deployment's id (its
`status.deploymentId`, or the `spec.deploymentId` it adopts) or carries the create
marker under the deployment's name, or its agent and environment (the
`deployplane.io/external-name` annotation: a create that may have happened before any
id was recorded). Exporting such a deployment
again would make an ObserveOnly twin of a managed resource, so `export` skips them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from deployplane.api.models import DeploymentAgent
from deployplane.kinds.agentdeployment.keys import agent_key
from deployplane.reconcile.marker import EXTERNAL_NAME_ANNOTATION

__all__ = ["Managers"]


@dataclass(frozen=True)
class Managers:
    """The AgentDeployments (`namespace/name`) that manage deployments, by deployment id
    and by the name their create marker holds."""

    by_id: Mapping[str, str] = field(default_factory=dict)
    by_name: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def of(cls, agentdeployments: Iterable[Mapping[str, Any]]) -> Managers:
        by_id: dict[str, str] = {}
        by_name: dict[str, str] = {}
        for obj in agentdeployments:
            meta = obj.get("metadata") or {}
            who = f"{meta.get('namespace')}/{meta.get('name')}"
            for recorded in (
                (obj.get("status") or {}).get("deploymentId"),
                (obj.get("spec") or {}).get("deploymentId"),
            ):
                if recorded:
                    by_id.setdefault(str(recorded), who)
            marker = (meta.get("annotations") or {}).get(EXTERNAL_NAME_ANNOTATION)
            if marker:
                by_name.setdefault(str(marker), who)
        return cls(by_id, by_name)

    def manager_of(
        self, deployment_id: str, name: str, agent: DeploymentAgent | None = None
    ) -> str | None:
        """The AgentDeployment that manages this deployment, if one does."""
        by_key = self.by_name.get(agent_key(agent) if agent is not None else name)
        return self.by_id.get(deployment_id) or by_key
