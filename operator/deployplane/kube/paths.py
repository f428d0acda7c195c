"""The API group and version of deployplane's kinds, their REST paths, and the label
that shards them (no imports: the CRD generator and the command line's declarations
read them without loading an HTTP client)."""

from __future__ import annotations

from typing import Final

GROUP: Final = "deployplane.io"
VERSION: Final = "v1alpha1"


def collection(plural: str, namespace: str | None) -> str:
    if namespace is None:
        return f"/apis/{GROUP}/{VERSION}/{plural}"
    return f"/apis/{GROUP}/{VERSION}/namespaces/{namespace}/{plural}"


def object_path(plural: str, namespace: str, name: str) -> str:
    return f"{collection(plural, namespace)}/{name}"


SHARD_LABEL: Final = "sharding.fluxcd.io/key"
"""Flux's sharding label: its value names the shard that reconciles the resource."""
