"""The name the emulator gives a deployment created for an agent (`rules.agents`)."""

from __future__ import annotations

import uuid

import pytest

from deployplane.api.models import AGENT_ID_MAX_LENGTH, NAME_MAX_LENGTH, DeploymentAgent
from deployplane.emulator.rules.agents import agent_deployment_name, suffixed_name


@pytest.mark.parametrize(
    ("agent_id", "environment", "name"),
    [
        ("support-bot", "production", "support-bot-production"),
        ("Support Bot", "staging", "support-bot-staging"),
        ("acme/support_bot.v2", "development", "acme-support-bot-v2-development"),
        ("--bot--", "staging", "bot-staging"),
        ("___", "production", "agent-production"),
        ("ÄÖ", "staging", "agent-staging"),
    ],
)
def test_the_name_is_the_normalised_agent_id_and_the_environment(
    agent_id: str, environment: str, name: str
) -> None:
    agent = DeploymentAgent(agent_id=agent_id, environment=environment)
    assert agent_deployment_name(agent) == name


def test_a_taken_name_is_suffixed_with_the_deployment_ids_first_eight_hex_digits() -> None:
    deployment_id = uuid.UUID("1a2b3c4d-0000-4000-8000-000000000000")
    assert suffixed_name("bot-staging", deployment_id) == "bot-staging-1a2b3c4d"


def test_the_longest_agent_id_still_makes_a_name_within_bounds() -> None:
    agent = DeploymentAgent(agent_id="a" * AGENT_ID_MAX_LENGTH, environment="production")
    name = suffixed_name(agent_deployment_name(agent), uuid.uuid4())
    assert len(name) <= NAME_MAX_LENGTH
