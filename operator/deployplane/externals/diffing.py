"""Desired-vs-latest comparison helpers shared by the external clients (ACK style)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel


def prune(value: Any) -> Any:
    """Drop nulls (and objects left empty) recursively: the service reports unset
    optional fields as null, a spec simply leaves them out; both mean "not set"."""
    if isinstance(value, dict):
        pruned = {k: prune(v) for k, v in value.items() if v is not None}
        return {k: v for k, v in pruned.items() if v != {}}
    if isinstance(value, list):
        return [prune(v) for v in value]
    return value


def dump(model: BaseModel | None, **kw: Any) -> dict[str, Any]:
    """A model as the API's JSON (snake_case), nulls pruned; {} for None."""
    if model is None:
        return {}
    result: dict[str, Any] = prune(model.model_dump(mode="json", **kw))
    return result


def differing(desired: dict[str, Any], latest: dict[str, Any]) -> dict[str, Any]:
    """The desired top-level fields whose value differs from latest. Fields the spec
    leaves out are not ours to manage and are never reported."""
    return {k: v for k, v in desired.items() if prune(v) != latest.get(k)}
