"""AgentDeployment's externals: resolve (references), diff (pure, the PATCH), status
(a deployment as the CR's status and readiness), client (the calls)."""

from deployplane.externals.agentdeployment.client import (
    AgentDeploymentConnecter,
    AgentDeploymentExternal,
)
from deployplane.externals.agentdeployment.diff import DeploymentDelta, diff
from deployplane.externals.agentdeployment.resolve import Desired, secrets_digest
from deployplane.externals.agentdeployment.status import AgentDeploymentReason

__all__ = [
    "AgentDeploymentConnecter",
    "AgentDeploymentExternal",
    "AgentDeploymentReason",
    "DeploymentDelta",
    "Desired",
    "diff",
    "secrets_digest",
]
