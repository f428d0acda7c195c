"""The CRDs as the models generate them, read as schemas: each kind's openAPIV3Schema
and the keys of an object the apiserver would prune against it. Shared by the CRD
schema tests and the tests of what `deployplane export` writes."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from deployplane.crdgen import schema

Node = dict[str, Any]


def crds() -> dict[str, Node]:
    """The generated CustomResourceDefinitions by kind."""
    return {crd["spec"]["names"]["kind"]: crd for crd in schema.custom_resource_definitions()}


def schema_root(kind: str) -> Node:
    """The openAPIV3Schema of `kind`'s CRD."""
    root: Node = crds()[kind]["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    return root


def unknown_keys(value: Any, node: Node, path: str) -> Iterator[str]:
    """Keys the apiserver would prune: not in the schema and not preserved."""
    if isinstance(value, dict) and node.get("type") == "object":
        props = node.get("properties", {})
        for key, child in value.items():
            if key in props:
                yield from unknown_keys(child, props[key], f"{path}.{key}")
            elif not node.get("x-kubernetes-preserve-unknown-fields"):
                yield f"{path}.{key}"
    elif isinstance(value, list) and "items" in node:
        for i, item in enumerate(value):
            yield from unknown_keys(item, node["items"], f"{path}[{i}]")
