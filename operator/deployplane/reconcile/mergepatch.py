"""The smallest JSON merge patch from one status to another (no write when equal)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def merge_patch(current: Mapping[str, Any], desired: Mapping[str, Any]) -> dict[str, Any]:
    """RFC 7386 patch turning `current` into `desired`; {} when they are equal."""
    patch: dict[str, Any] = {}
    for key in current.keys() - desired.keys():
        patch[key] = None
    for key, value in desired.items():
        old = current.get(key)
        if isinstance(value, Mapping) and isinstance(old, Mapping):
            sub = merge_patch(old, value)
            if sub:
                patch[key] = sub
        elif value != old:
            patch[key] = value
    return patch


def apply_merge_patch(current: Mapping[str, Any], patch: Mapping[str, Any]) -> dict[str, Any]:
    """`current` with `patch` applied, as the apiserver would."""
    result = dict(current)
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        elif isinstance(value, Mapping):
            # RFC 7386: a patch object applies to the target's object, or to {} if the
            # target holds anything else, so nulls inside it never land in the result.
            old = result.get(key)
            result[key] = apply_merge_patch(old if isinstance(old, Mapping) else {}, value)
        else:
            result[key] = value
    return result
