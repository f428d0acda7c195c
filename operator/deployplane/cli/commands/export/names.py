"""Kubernetes names for exported resources (`deployplane export`): pure functions.

A control-plane name is free text; a custom resource's `metadata.name` is not. Each
exported resource is named by its external name made a DNS-1123 label (the strictest
name Kubernetes uses, so the same name also works for its placeholder Secret and as a
label value): lower case, every run of other characters made one `-`, at most 63
characters. The exact external name stays in `spec.name` wherever the two differ, so
nothing about the deployment changes.

Two external names that come out the same (`My_Bot` and `my-bot`) would overwrite each
other: all of them then get the first 8 hex digits of their id as a suffix, so each name
stays stable from one export to the next whatever else is exported.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from uuid import UUID

__all__ = ["LABEL_MAX", "ExportNameError", "Named", "dns_label", "is_secret_key", "unique_names"]

LABEL_MAX = 63
_INVALID_RUN = re.compile(r"[^a-z0-9]+")
_SECRET_KEY = re.compile(r"^[-._a-zA-Z0-9]{1,253}$")
_SUFFIX_LEN = 8


class ExportNameError(ValueError):
    """Names that cannot be made unique (one line, for the CLI)."""


@dataclass(frozen=True)
class Named:
    """An external resource to name: its id and the name it has on the control plane."""

    id: UUID
    external_name: str


def dns_label(external_name: str, fallback: str) -> str:
    """`external_name` as a DNS-1123 label; `fallback` when nothing of it is left."""
    label = _INVALID_RUN.sub("-", external_name.lower()).strip("-")
    label = label[:LABEL_MAX].rstrip("-")
    return label or fallback


def _suffixed(base: str, resource_id: UUID) -> str:
    suffix = resource_id.hex[:_SUFFIX_LEN]
    return f"{base[: LABEL_MAX - _SUFFIX_LEN - 1].rstrip('-')}-{suffix}"


def unique_names(items: Sequence[Named], kind_word: str) -> dict[UUID, str]:
    """A distinct DNS-1123 label for each item, by id (see the module's docstring).

    `kind_word` names the fallback (`deployment-1a2b3c4d`) for a name with no letter or
    digit at all. Raises `ExportNameError` in the one case suffixes cannot settle: a
    suffixed name equal to another resource's own name."""
    bases = {
        item.id: dns_label(item.external_name, f"{kind_word}-{item.id.hex[:_SUFFIX_LEN]}")
        for item in items
    }
    counts: dict[str, int] = {}
    for base in bases.values():
        counts[base] = counts.get(base, 0) + 1
    names = {
        item_id: base if counts[base] == 1 else _suffixed(base, item_id)
        for item_id, base in bases.items()
    }
    seen: dict[str, UUID] = {}
    for item_id, name in names.items():
        if name in seen:
            raise ExportNameError(
                f"{kind_word}s {seen[name]} and {item_id} would both be named {name!r}; "
                "export them separately (--name-contains) and rename one"
            )
        seen[name] = item_id
    return names


def is_secret_key(name: str) -> bool:
    """Whether `name` can be a key of a Kubernetes Secret (it names the placeholder's key)."""
    return bool(_SECRET_KEY.match(name))
