"""A deployment keyed by a logical agent and an environment instead of by a name: what
the vendor's CLI sends as `agent` (`langgraph deploy --agent-id A --agent-environment
E`, langgraph-cli 0.4.40, `host_backend.create_deployment`), the published contract
(0.1.0) being silent on it. The control plane names such a deployment itself and keeps
one per (workspace, agent, environment)."""

from __future__ import annotations

from typing import Final

from pydantic import Field

from deployplane.api.enums import AgentEnvironment
from deployplane.api.models.common import ApiModel

__all__ = ["AGENT_ID_MAX_LENGTH", "DeploymentAgent"]

AGENT_ID_MAX_LENGTH: Final = 128
"""Longest agent id: the deployment's name the control plane makes from it (with the
environment and a suffix) stays within a name's 253 characters."""

# Not empty, and no whitespace at either end: the vendor's CLI refuses an empty or blank
# --agent-id, and " a" and "a" would read as one agent and key two deployments.
_AGENT_ID_PATTERN: Final = r"^\S(.*\S)?$"


class DeploymentAgent(ApiModel):
    """The agent a deployment belongs to, and which of its environments it is."""

    agent_id: str = Field(
        min_length=1,
        max_length=AGENT_ID_MAX_LENGTH,
        pattern=_AGENT_ID_PATTERN,
        description=(
            "Logical agent id (no whitespace at either end). One deployment per agent "
            "and environment in a workspace."
        ),
    )
    environment: AgentEnvironment = Field(
        description="development, staging or production.",
    )
