"""The create marker's key of an agent's deployment, and the agent read back from it."""

from __future__ import annotations

import pytest

from deployplane.api.models import DeploymentAgent
from deployplane.kinds.agentdeployment.keys import agent_key, agent_of_key


@pytest.mark.parametrize("agent_id", ["support-bot", "Support Bot", "a in b", "x" * 128])
@pytest.mark.parametrize("environment", ["development", "staging", "production"])
def test_the_key_names_the_agent_and_is_read_back(agent_id: str, environment: str) -> None:
    agent = DeploymentAgent(agent_id=agent_id, environment=environment)
    key = agent_key(agent)
    assert key == f"agent {agent_id} in {environment}"
    assert agent_of_key(key) == agent


@pytest.mark.parametrize(
    "key",
    ["support-bot", "agent support-bot", "agent bot in qa", "agent  bot in staging", "agentx in y"],
)
def test_a_name_is_no_agent(key: str) -> None:
    assert agent_of_key(key) is None
