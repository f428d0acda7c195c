"""Answers checked against the published contract's schemas
(tests/support/published-contract.json): what the service's own document says a
resource looks like, not what the emulator's models say."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema

CONTRACT: dict[str, Any] = json.loads(
    (Path(__file__).parent / "published-contract.json").read_text()
)


def assert_published(schema: str, instance: Any) -> None:
    """Fails naming the first violation of the published schema `schema`."""
    document = {"$ref": f"#/components/schemas/{schema}", "components": CONTRACT["components"]}
    jsonschema.Draft202012Validator(document).validate(instance)
