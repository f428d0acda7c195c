"""The agent a deployment is keyed by (the vendor CLI's agent mode): a create carries
`name` or `agent`, never both, never neither; the agent's fields; an answer's agent and
`is_preview`."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from deployplane.api.models import AgentEnvironment, Deployment, DeploymentAgent, DeploymentCreate

IMAGE = {"source": "external_docker", "source_revision_config": {"image_uri": "r/app:1"}}
AGENT = {"agent_id": "support-bot", "environment": "staging"}


def refusals(data: dict[str, Any]) -> list[tuple[tuple[str | int, ...], str]]:
    with pytest.raises(ValidationError) as refused:
        DeploymentCreate.model_validate(data)
    return [(tuple(e["loc"]), e["type"]) for e in refused.value.errors()]


def test_the_environments_are_the_vendor_clis_three() -> None:
    assert [e.value for e in AgentEnvironment] == ["development", "staging", "production"]


def test_a_create_carries_a_name_or_an_agent() -> None:
    by_agent = DeploymentCreate.model_validate({**IMAGE, "agent": AGENT})
    assert by_agent.name is None
    assert by_agent.agent == DeploymentAgent(agent_id="support-bot", environment="staging")
    # what the client sends: the agent, and no name at all
    assert "name" not in by_agent.model_dump(mode="json", exclude_unset=True)
    assert DeploymentCreate.model_validate({**IMAGE, "name": "app"}).agent is None


def test_both_or_neither_is_refused_at_name() -> None:
    assert refusals(IMAGE) == [(("name",), "missing")]
    assert refusals({**IMAGE, "name": "app", "agent": AGENT}) == [(("name",), "name_with_agent")]


def test_an_invalid_agent_is_refused_at_its_own_field_only() -> None:
    bad_environment = {**IMAGE, "agent": {**AGENT, "environment": "qa"}}
    assert refusals(bad_environment) == [(("agent", "environment"), "enum")]
    for agent_id in ("", " bot", "bot ", "a\nb", "x" * 129):
        found = refusals({**IMAGE, "agent": {**AGENT, "agent_id": agent_id}})
        assert [loc for loc, _ in found] == [("agent", "agent_id")], agent_id
    assert DeploymentAgent(agent_id="a b", environment="production").agent_id == "a b"
    assert DeploymentAgent(agent_id="x" * 128, environment="production")


def test_the_agent_reads_the_custom_resources_camel_case_too() -> None:
    agent = DeploymentAgent.model_validate({"agentId": "bot", "environment": "production"})
    assert agent.model_dump(mode="json") == {"agent_id": "bot", "environment": "production"}


def test_an_answer_shows_its_agent_and_is_no_preview_unless_it_says() -> None:
    answer = {
        "id": "11111111-1111-4111-8111-111111111111",
        "tenant_id": "22222222-2222-4222-8222-222222222222",
        "name": "bot-staging",
        "source": "external_docker",
        "created_at": "2026-01-01T00:00:00Z",
        "updated_at": "2026-01-01T00:00:00Z",
        "status": "READY",
    }
    plain = Deployment.model_validate(answer)
    assert (plain.agent, plain.is_preview) == (None, False)
    keyed = Deployment.model_validate({**answer, "agent": AGENT, "is_preview": True})
    assert keyed.agent == DeploymentAgent(agent_id="support-bot", environment="staging")
    assert keyed.is_preview
