"""The natural key of a deployment made for an agent: what its create marker holds
(`reconcile.marker`), `agent support-bot in production`, and the agent read back from
such a key (a marker names the key a create was made under, which may not be the
spec's any more)."""

from __future__ import annotations

from typing import Final

from deployplane.api.models import AgentEnvironment, DeploymentAgent

__all__ = ["agent_key", "agent_of_key"]

_AGENT_KEY_PREFIX: Final = "agent "
_AGENT_KEY_IN: Final = " in "


def agent_key(agent: DeploymentAgent) -> str:
    """The natural key of an agent's deployment: `agent support-bot in production`."""
    return f"{_AGENT_KEY_PREFIX}{agent.agent_id}{_AGENT_KEY_IN}{agent.environment.value}"


def agent_of_key(key: str) -> DeploymentAgent | None:
    """The agent and environment a natural key names (`agent_key`); None for a name.
    (An environment never holds " in ", so an agent id may.)"""
    if not key.startswith(_AGENT_KEY_PREFIX) or _AGENT_KEY_IN not in key:
        return None
    agent_id, environment = key.removeprefix(_AGENT_KEY_PREFIX).rsplit(_AGENT_KEY_IN, 1)
    if environment not in {e.value for e in AgentEnvironment}:
        return None
    try:
        return DeploymentAgent(agent_id=agent_id, environment=AgentEnvironment(environment))
    except ValueError:  # not an agent id the service takes: a name after all
        return None
