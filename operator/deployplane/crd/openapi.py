"""Pydantic models -> structural OpenAPI v3 schemas, as a CRD wants them.

Why walk `model_fields` rather than post-process pydantic's JSON schema: a CRD schema
must be *structural* (no `$ref`, no `anyOf` mixing types, a `type` on every node), and
pydantic's JSON schema is full of `$ref` and `anyOf: [{...}, {type: null}]` for every
optional field. Walking the fields gives exactly what the apiserver wants: an optional
field is simply not `required`, nothing is `nullable` (the apiserver prunes `null`s of
non-nullable fields before validating), and every node carries its description.

Bounds: CEL rules are admitted only if their worst-case cost fits the apiserver's
budget, and that cost is estimated from `maxLength` / `maxItems` / `maxProperties`.
So every string, list and free-form map gets a bound: from the model when it has one,
otherwise from the tables below (names 253, URLs, paths and commands 4096, lists 64).
"""

from __future__ import annotations

import inspect
import types
from enum import Enum
from typing import Annotated, Any, Final, Union, get_args, get_origin
from uuid import UUID

import annotated_types
from pydantic import BaseModel
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from deployplane.api.models import camelize

__all__ = ["DEFAULT_MAX_PROPERTIES", "UUID_PATTERN", "Schema", "object_schema"]

Schema = dict[str, Any]

# The apiserver checks `format: uuid` loosely (and older versions not at all), so the
# pattern is what really refuses a malformed id.
UUID_PATTERN: Final = (
    "^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$"
)

DEFAULT_STRING_MAX_LENGTH: Final = 253  # a Kubernetes object name (DNS subdomain)
DEFAULT_MAX_ITEMS: Final = 64
DEFAULT_MAX_PROPERTIES: Final = 64

# Strings whose natural bound is not a name's. Keyed by property name: the same name
# means the same kind of value across the models (a path is a path).
_STRING_MAX_LENGTH: Final[dict[str, int]] = {
    # URLs, paths, images, commands
    "repoUrl": 4096,
    "customUrl": 4096,
    "imageUri": 4096,
    "image": 4096,
    "graphConfigPath": 4096,
    "installCommand": 4096,
    "buildCommand": 4096,
    "mountPath": 4096,
    "subPath": 4096,
    "subPathExpr": 4096,
    "workingDir": 4096,
    "command": 4096,
    "args": 4096,
    # git refs are bounded by the host, not by git; 1024 is far above any real one
    "repoRef": 1024,
    # a namespace name is a DNS label
    "k8sNamespace": 63,
    "k8sNamespaces": 63,
    # literal env values and condition messages can be long (metav1.Condition: 32768)
    "value": 32768,
    "message": 32768,
    # metav1.Condition bounds
    "type": 316,
    "reason": 1024,
    "lastTransitionTime": 64,
    # a sha1 is 40 hex digits, a sha256 64
    "repoCommitSha": 64,
    "secretsHash": 128,
}

_MAX_ITEMS: Final[dict[str, int]] = {
    # four condition types are used; room for a few more without being unbounded
    "conditions": 16,
}

# Lists whose items are identified by a key: the apiserver refuses duplicates, and
# server-side apply merges them per item instead of replacing the whole list.
_LIST_MAP_KEYS: Final[dict[str, str]] = {
    "conditions": "type",
    "secrets": "name",
}


def _unwrap(annotation: Any) -> tuple[Any, list[Any]]:
    """Strip `X | None` and `Annotated[...]`, collecting the constraint metadata."""
    constraints: list[Any] = []
    tp = annotation
    while True:
        origin = get_origin(tp)
        if origin is Annotated:
            base, *metadata = get_args(tp)
            for item in metadata:
                constraints.extend(item.metadata if isinstance(item, FieldInfo) else [item])
            tp = base
        elif origin in (Union, types.UnionType):
            args = [a for a in get_args(tp) if a is not type(None)]
            if len(args) == 1:
                tp = args[0]
            else:
                return tp, constraints  # a real union (int | float): resolved by _node
        else:
            return tp, constraints


def _docstring(cls: type) -> str | None:
    """The class's own docstring as one line per paragraph (not an inherited one)."""
    doc = cls.__dict__.get("__doc__")
    if not doc:
        return None
    paragraphs = inspect.cleandoc(doc).split("\n\n")
    return "\n\n".join(" ".join(p.split()) for p in paragraphs)


def _map_node(tp: Any, where: str) -> Schema:
    """A map: of strings (labels), or free-form."""
    key_tp, value_tp = get_args(tp)
    node: Schema = {"type": "object", "maxProperties": DEFAULT_MAX_PROPERTIES}
    if key_tp is str and value_tp is str:
        node["additionalProperties"] = {"type": "string"}
    elif key_tp is str and value_tp is Any:
        node["x-kubernetes-preserve-unknown-fields"] = True
    else:
        raise TypeError(f"{where}: only dict[str, str] and dict[str, Any] maps are supported")
    return node


def _apply_constraints(node: Schema, constraints: list[Any], *, where: str) -> None:
    length_keys = {
        "string": ("minLength", "maxLength"),
        "array": ("minItems", "maxItems"),
        "object": ("minProperties", "maxProperties"),
    }
    for c in constraints:
        if isinstance(c, annotated_types.Ge):
            node["minimum"] = c.ge
        elif isinstance(c, annotated_types.Le):
            node["maximum"] = c.le
        elif isinstance(c, annotated_types.MinLen):
            node[length_keys[node["type"]][0]] = c.min_length
        elif isinstance(c, annotated_types.MaxLen):
            node[length_keys[node["type"]][1]] = c.max_length
        elif node["type"] == "string" and isinstance(getattr(c, "pattern", None), str):
            # Field(pattern=...): written for both engines (no look-arounds or named
            # groups), so the apiserver refuses what pydantic would.
            node["pattern"] = c.pattern
        else:
            # Refuse rather than drop: a constraint the CRD does not carry would let the
            # apiserver accept what the operator later refuses.
            raise TypeError(f"{where}: constraint {c!r} has no CRD equivalent here")


def _node(tp: Any, constraints: list[Any], *, prop: str, where: str) -> Schema:
    """The schema of one type; `prop` (camelCase) chooses default bounds."""
    node: Schema
    origin = get_origin(tp)
    if isinstance(tp, type) and issubclass(tp, Enum):
        values = [m.value for m in tp]
        node = {
            "type": "string",
            "enum": values,
            "maxLength": max(len(v) for v in values),
        }
    elif tp is bool:
        node = {"type": "boolean"}
    elif tp is int:
        # No `format: int64` (controller-gen's for Go's `int` alike): with it, the
        # apiserver refuses 1.5 twice, once as "not int64" and once as "format int64".
        node = {"type": "integer"}
    elif tp is float or (origin in (Union, types.UnionType) and set(get_args(tp)) == {int, float}):
        node = {"type": "number"}
    elif tp is str:
        node = {"type": "string", "maxLength": _STRING_MAX_LENGTH.get(prop, 0)}
        if not node["maxLength"]:
            node["maxLength"] = DEFAULT_STRING_MAX_LENGTH
    elif tp is UUID:
        node = {
            "type": "string",
            "format": "uuid",
            "pattern": UUID_PATTERN,
            "minLength": 36,
            "maxLength": 36,
        }
    elif origin is list:
        (item_tp,) = get_args(tp)
        item, item_constraints = _unwrap(item_tp)
        node = {
            "type": "array",
            "maxItems": _MAX_ITEMS.get(prop, DEFAULT_MAX_ITEMS),
            "items": _node(item, item_constraints, prop=prop, where=f"{where}[]"),
        }
        if prop in _LIST_MAP_KEYS:
            node["x-kubernetes-list-type"] = "map"
            node["x-kubernetes-list-map-keys"] = [_LIST_MAP_KEYS[prop]]
    elif origin is dict:
        node = _map_node(tp, where)
    elif isinstance(tp, type) and issubclass(tp, BaseModel):
        node = object_schema(tp)
    else:
        raise TypeError(f"{where}: type {tp!r} has no CRD schema mapping")
    _apply_constraints(node, constraints, where=where)
    return node


def _property_name(name: str, info: FieldInfo) -> str:
    """camelCase on the CR: the status models alias to camel, the spec models accept it."""
    if isinstance(info.alias, str):
        return info.alias
    return camelize(name)


def _default(info: FieldInfo) -> Any:
    if info.default is PydanticUndefined or info.default is None or info.default_factory:
        return PydanticUndefined
    value = info.default
    return value.value if isinstance(value, Enum) else value


def object_schema(model: type[BaseModel]) -> Schema:
    """The structural schema of a model: every field described, required ones listed."""
    properties: Schema = {}
    required: list[str] = []
    for name, info in model.model_fields.items():
        prop = _property_name(name, info)
        where = f"{model.__name__}.{name}"
        tp, constraints = _unwrap(info.annotation)
        constraints = [*constraints, *info.metadata]
        node = _node(tp, constraints, prop=prop, where=where)
        description = info.description
        if description is None and isinstance(tp, type):
            description = _docstring(tp)
        if description is None:
            # `kubectl explain` is the user's manual: an undocumented field is a bug.
            raise ValueError(f"{where}: no description (Field(description=...) or docstring)")
        default = _default(info)
        if default is not PydanticUndefined:
            node["default"] = default
        node.pop("description", None)  # the field's own words win over its type's docstring
        properties[prop] = {"description": description, **node}
        if info.is_required():
            required.append(prop)
    schema: Schema = {"type": "object"}
    doc = _docstring(model)
    if doc is not None:
        schema["description"] = doc
    schema["properties"] = properties
    if required:
        schema["required"] = required
    if model.model_config.get("extra") == "allow":
        # Known fields are validated; the ones the spec leaves open are kept as given.
        schema["maxProperties"] = DEFAULT_MAX_PROPERTIES
        schema["x-kubernetes-preserve-unknown-fields"] = True
    return schema
