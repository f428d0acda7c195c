"""Answers checked against the published contract's schemas
(tests/support/published-contract.json): what the service's own document says a
resource looks like, not what the emulator's models say.

One fact is added, from the vendor's current CLI (langgraph-cli 0.4.40, which the
contract 0.1.0 predates): `source_config.deployment_type` may also be `dev_zero`, what
its `--deployment-type serverless` sends (docs/emulator.md)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema

CONTRACT: dict[str, Any] = json.loads(
    (Path(__file__).parent / "published-contract.json").read_text()
)
_TYPE = CONTRACT["components"]["schemas"]["SourceConfig"]["properties"]["deployment_type"]
_TYPE["anyOf"][0]["enum"].append("dev_zero")


def assert_published(schema: str, instance: Any) -> None:
    """Fails naming the first violation of the published schema `schema`."""
    document = {"$ref": f"#/components/schemas/{schema}", "components": CONTRACT["components"]}
    jsonschema.Draft202012Validator(document).validate(instance)
