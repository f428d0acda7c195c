"""How a field is spelled in the API (snake_case) and in a custom resource (camelCase).

A module of its own, with no model in it: the generic core (`deployplane.reconcile`)
names fields as the user wrote them without loading the API models.
"""

from __future__ import annotations

import re

__all__ = ["camelize"]

_UNDERSCORE_LETTER = re.compile(r"_([a-z0-9])")


def camelize(name: str) -> str:
    """`repo_url` -> `repoUrl`; names without underscores (`mountPath`) are unchanged."""
    return _UNDERSCORE_LETTER.sub(lambda m: m.group(1).upper(), name)
