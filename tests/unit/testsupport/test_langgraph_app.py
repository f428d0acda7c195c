"""tests/support/langgraph_app.py reads the deployment's id from either line the
vendor's `langgraph deploy` prints: the one after a create and the one after it found a
deployment of that name."""

from __future__ import annotations

from tests.support.langgraph_app import deployment_id

ID = "a4b9ae1c-e7e1-407c-9ed4-33fbf1f447ec"


def test_the_id_of_a_deployment_the_cli_created() -> None:
    assert deployment_id(f"1. Creating deployment\n   Deployment ID: {ID}\n") == ID


def test_the_id_of_a_deployment_the_cli_found_by_its_name() -> None:
    output = f"1. Looking up deployment 'app'\n   Found existing deployment (ID: {ID})\n"
    assert deployment_id(output) == ID
