"""Deployments keyed by an agent and an environment (the vendor CLI's agent mode): the
name the control plane gives such a deployment, and the refusals' words. Pure, so
unit-tested without a database (docs/emulator.md, "Agent mode", says which rule is the
vendor CLI's and which is the emulator's own; that a create carries one of `name` and
`agent` is `DeploymentCreate`'s own check)."""

from __future__ import annotations

import re
import uuid
from typing import Final

from deployplane.api.models import DeploymentAgent

__all__ = [
    "AGENT_MODE_OFF",
    "AGENT_TAKEN",
    "agent_deployment_name",
    "suffixed_name",
]

# "off", not "not enabled": the vendor's CLI reads a 403 saying "not enabled" as the
# whole service being off for the organization, and says that instead.
AGENT_MODE_OFF: Final = (
    "Agent mode is off for this workspace: create the deployment with a name, and list "
    "deployments without agent_id or agent_environment."
)
# The vendor's CLI shows its own sentence for any 409 of an agent create ("This agent
# already has a deployment in this environment."); others read the detail.
AGENT_TAKEN: Final = "This agent already has a deployment in this environment"

_NOT_IN_A_NAME = re.compile(r"[^a-z0-9-]+")


def agent_deployment_name(agent: DeploymentAgent) -> str:
    """`<agent id>-<environment>`, the agent id as the vendor's CLI normalises a name
    (lowercase; every run of characters other than a-z, 0-9 and '-' one '-'; '-' trimmed
    at both ends), `agent` if nothing is left: e.g. `support-bot-production`."""
    slug = _NOT_IN_A_NAME.sub("-", agent.agent_id.lower()).strip("-") or "agent"
    return f"{slug}-{agent.environment.value}"


def suffixed_name(name: str, deployment_id: uuid.UUID) -> str:
    """The name when `name` is taken in the workspace (by another deployment, or a
    tracing project that outlived its deployment): the deployment id's first 8 hex
    digits appended, e.g. `support-bot-production-1a2b3c4d`."""
    return f"{name}-{deployment_id.hex[:8]}"
