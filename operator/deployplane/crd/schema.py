"""The two CustomResourceDefinitions, generated from the spec and status models.

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

The CEL rules (`x-kubernetes-validations`) implement the rules of ARCHITECTURE.md
("Custom resources") so that `kubectl apply` itself refuses a bad spec, with a message
that names the field. They are declared by JSON path below and attached after the
walk; a path that no longer exists in the models fails generation instead of silently
dropping a rule.

Run `python -m deployplane.crd.schema [--check] [OUT_DIR]` to (re)write, or verify,
`crds/*.yaml` and `charts/deployplane/crds/*.yaml` under OUT_DIR (default: this
checkout's root).
"""

from __future__ import annotations

import argparse
import difflib
import inspect
import sys
import types
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import Annotated, Any, Final, Union, get_args, get_origin
from uuid import UUID

import annotated_types
import yaml
from pydantic import BaseModel
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from deployplane.api.models import camelize
from deployplane.crd.specs import GROUP, VERSION, AgentDeploymentSpec, ListenerSpec
from deployplane.crd.status import AgentDeploymentStatus, ListenerStatus

__all__ = [
    "OUTPUT_DIRS",
    "UUID_PATTERN",
    "CrdKind",
    "Rule",
    "custom_resource_definitions",
    "main",
    "object_schema",
    "rendered_files",
]

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


# ------------------------------------------------------------------- model walking


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
        node = {"type": "integer", "format": "int64"}
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
        key_tp, value_tp = get_args(tp)
        if key_tp is not str or value_tp is not Any:
            raise TypeError(f"{where}: only free-form dict[str, Any] maps are supported")
        node = {
            "type": "object",
            "maxProperties": DEFAULT_MAX_PROPERTIES,
            "x-kubernetes-preserve-unknown-fields": True,
        }
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


# --------------------------------------------------------------------- CEL rules


@dataclass(frozen=True)
class Rule:
    """One `x-kubernetes-validations` entry."""

    rule: str
    message: str
    field_path: str | None = None
    reason: str | None = None

    def as_dict(self) -> Schema:
        out: Schema = {"rule": self.rule, "message": self.message}
        if self.field_path is not None:
            out["fieldPath"] = self.field_path
        if self.reason is not None:
            out["reason"] = self.reason
        return out


REQUIRED: Final = "FieldValueRequired"
FORBIDDEN: Final = "FieldValueForbidden"


def _immutable(field_name: str) -> Rule:
    return Rule("self == oldSelf", f"spec.{field_name} is immutable")


def _has(path: str) -> str:
    """`has()` guarded on each parent: `has(a.b.c)` errors when `a.b` is absent."""
    parts = path.split(".")
    return " && ".join(f"has(self.{'.'.join(parts[: i + 1])})" for i in range(len(parts)))


def _required_for(source: str, path: str) -> Rule:
    return Rule(
        f"self.source != '{source}' || ({_has(path)})",
        f"spec.{path} is required when spec.source is {source}",
        field_path=f".{path}",
        reason=REQUIRED,
    )


def _forbidden_for(source: str, path: str, why: str) -> Rule:
    return Rule(
        f"self.source != '{source}' || !({_has(path)})",
        f"spec.{path} is not allowed when spec.source is {source} ({why})",
        field_path=f".{path}",
        reason=FORBIDDEN,
    )


_GIT_ONLY_FIELDS: Final = (
    "sourceConfig.integrationId",
    "sourceConfig.deploymentType",
    "sourceConfig.repoUrl",
    "sourceConfig.repository",
    "sourceConfig.buildOnPush",
    "sourceRevisionConfig.repoRef",
    "sourceRevisionConfig.graphConfigPath",
)

AGENT_DEPLOYMENT_RULES: Final[dict[str, list[Rule]]] = {
    "": [
        Rule(
            "has(self.name) == has(oldSelf.name)",
            "spec.name cannot be added or removed after creation (it defaults to "
            "metadata.name and names the deployment for good)",
            field_path=".name",
        ),
        Rule(
            "!has(oldSelf.deploymentId) || has(self.deploymentId)",
            "spec.deploymentId cannot be removed once set",
            field_path=".deploymentId",
        ),
        _required_for("git_host", "sourceConfig.integrationId"),
        Rule(
            "self.source != 'git_host' || (has(self.sourceConfig) && "
            "(has(self.sourceConfig.repoUrl) || has(self.sourceConfig.repository)))",
            "spec.sourceConfig.repoUrl or spec.sourceConfig.repository is required when "
            "spec.source is git_host",
            field_path=".sourceConfig",
            reason=REQUIRED,
        ),
        _required_for("git_host", "sourceRevisionConfig.graphConfigPath"),
        _forbidden_for(
            "git_host",
            "sourceRevisionConfig.imageUri",
            "git_host builds the image from the repository",
        ),
        _required_for("external_docker", "sourceRevisionConfig.imageUri"),
        _forbidden_for("git_host", "secretReferences", "external_docker only"),
        _forbidden_for(
            "git_host",
            "sourceConfig.customUrl",
            "the service sets a git_host deployment's URL itself; see status.url",
        ),
        Rule(
            "(has(self.sourceConfig) && has(self.sourceConfig.deploymentType)) == "
            "(has(oldSelf.sourceConfig) && has(oldSelf.sourceConfig.deploymentType))",
            "spec.sourceConfig.deploymentType cannot be added or removed after creation",
            field_path=".sourceConfig.deploymentType",
        ),
        *(_forbidden_for("external_docker", path, "git_host only") for path in _GIT_ONLY_FIELDS),
        Rule(
            "!(has(self.sourceConfig) && has(self.sourceConfig.buildOnPush) && "
            "self.sourceConfig.buildOnPush && has(self.sourceRevisionConfig) && "
            "has(self.sourceRevisionConfig.repoRef) && "
            "self.sourceRevisionConfig.repoRef.startsWith('refs/tags/'))",
            "spec.sourceConfig.buildOnPush must be false when spec.sourceRevisionConfig.repoRef "
            "is a tag (refs/tags/...): a tag never moves",
            field_path=".sourceConfig.buildOnPush",
        ),
    ],
    "name": [_immutable("name")],
    "source": [_immutable("source")],
    "deploymentId": [
        Rule("self == oldSelf", "spec.deploymentId is immutable once set"),
    ],
    "sourceConfig.deploymentType": [_immutable("sourceConfig.deploymentType")],
    "sourceConfig": [
        Rule(
            "!(has(self.listenerRef) && has(self.listenerId))",
            "spec.sourceConfig.listenerRef and spec.sourceConfig.listenerId are mutually "
            "exclusive: set one of them",
            field_path=".listenerRef",
        ),
        Rule(
            "!has(self.repository) || has(self.integrationId)",
            "spec.sourceConfig.integrationId is required when spec.sourceConfig.repository is "
            "set (the repository is looked up in that integration)",
            field_path=".integrationId",
            reason=REQUIRED,
        ),
    ],
}

LISTENER_RULES: Final[dict[str, list[Rule]]] = {
    "": [
        Rule(
            "!has(oldSelf.listenerId) || has(self.listenerId)",
            "spec.listenerId cannot be removed once set",
            field_path=".listenerId",
        ),
    ],
    "computeType": [_immutable("computeType")],
    "computeId": [_immutable("computeId")],
    "listenerId": [Rule("self == oldSelf", "spec.listenerId is immutable once set")],
}


def _attach_rules(spec: Schema, rules: dict[str, list[Rule]]) -> None:
    for path, entries in rules.items():
        node = spec
        for part in filter(None, path.split(".")):
            try:
                node = node["properties"][part]
            except KeyError:
                raise KeyError(f"CEL rule path spec.{path} is not in the schema") from None
        node["x-kubernetes-validations"] = [r.as_dict() for r in entries]


# ------------------------------------------------------------------------- CRDs


@dataclass(frozen=True)
class CrdKind:
    """What differs between the two CRDs."""

    kind: str
    plural: str
    short_names: tuple[str, ...]
    description: str
    spec_model: type[BaseModel]
    status_model: type[BaseModel]
    rules: dict[str, list[Rule]]
    printer_columns: list[Schema] = field(default_factory=list)

    @property
    def name(self) -> str:
        return f"{self.plural}.{GROUP}"


def _condition_column(condition: str) -> Schema:
    return {
        "name": condition,
        "type": "string",
        "description": f"Status of the {condition} condition.",
        "jsonPath": f'.status.conditions[?(@.type=="{condition}")].status',
    }


_AGE_COLUMN: Final[Schema] = {
    "name": "Age",
    "type": "date",
    "jsonPath": ".metadata.creationTimestamp",
}

KINDS: Final = (
    CrdKind(
        kind="AgentDeployment",
        plural="agentdeployments",
        short_names=("agd", "agentdep"),
        description=(
            "An agent-server deployment on the control plane, kept in sync with this spec "
            "(created, updated with new revisions, deleted per deletionPolicy)."
        ),
        spec_model=AgentDeploymentSpec,
        status_model=AgentDeploymentStatus,
        rules=AGENT_DEPLOYMENT_RULES,
        printer_columns=[
            _condition_column("Ready"),
            _condition_column("Synced"),
            {
                "name": "Revision",
                "type": "string",
                "description": "Status of the latest revision.",
                "jsonPath": ".status.revision.status",
            },
            {
                "name": "URL",
                "type": "string",
                "description": "URL of the deployment.",
                "jsonPath": ".status.url",
            },
            {
                "name": "Deployment ID",
                "type": "string",
                "description": "Deployment id on the control plane.",
                "jsonPath": ".status.deploymentId",
                "priority": 1,
            },
            _AGE_COLUMN,
        ],
    ),
    CrdKind(
        kind="Listener",
        plural="listeners",
        # not `ls`/`lis`/`listener`: short and unlikely to clash with other operators' kinds
        short_names=("dpl", "dplistener"),
        description=(
            "A listener (compute infrastructure that runs self-hosted deployments) on the "
            "control plane, kept in sync with this spec."
        ),
        spec_model=ListenerSpec,
        status_model=ListenerStatus,
        rules=LISTENER_RULES,
        printer_columns=[
            _condition_column("Ready"),
            _condition_column("Synced"),
            {
                "name": "Listener ID",
                "type": "string",
                "description": "Listener id on the control plane.",
                "jsonPath": ".status.listenerId",
            },
            {
                "name": "Compute ID",
                "type": "string",
                "description": "Unique id of the compute.",
                "jsonPath": ".spec.computeId",
                "priority": 1,
            },
            _AGE_COLUMN,
        ],
    ),
)


def _crd(kind: CrdKind) -> Schema:
    spec = object_schema(kind.spec_model)
    _attach_rules(spec, kind.rules)
    status = object_schema(kind.status_model)
    root: Schema = {
        "type": "object",
        "description": kind.description,
        "properties": {
            "apiVersion": {
                "description": f"Versioned schema of this object, e.g. {GROUP}/{VERSION}.",
                "type": "string",
            },
            "kind": {"description": f"{kind.kind}.", "type": "string"},
            "metadata": {"type": "object"},
            "spec": spec,
            "status": status,
        },
        "required": ["spec"],
    }
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {
            "name": kind.name,
            "labels": {"app.kubernetes.io/part-of": "deployplane"},
        },
        "spec": {
            "group": GROUP,
            "names": {
                "kind": kind.kind,
                "listKind": f"{kind.kind}List",
                "plural": kind.plural,
                "singular": kind.kind.lower(),
                "shortNames": list(kind.short_names),
                "categories": ["deployplane"],
            },
            "scope": "Namespaced",
            "versions": [
                {
                    "name": VERSION,
                    "served": True,
                    "storage": True,
                    "subresources": {"status": {}},
                    "additionalPrinterColumns": kind.printer_columns,
                    "schema": {"openAPIV3Schema": root},
                }
            ],
        },
    }


def custom_resource_definitions() -> list[Schema]:
    """Both CRDs as plain dicts, ready for `yaml.safe_dump` or the apiserver."""
    return [_crd(kind) for kind in KINDS]


# ----------------------------------------------------------------------- output

OUTPUT_DIRS: Final = ("crds", "charts/deployplane/crds")

_HEADER: Final = (
    "# Generated by `python -m deployplane.crd.schema` from the pydantic models in\n"
    "# deployplane.crd.specs and deployplane.crd.status. Do not edit by hand: change the\n"
    "# models (or the rules in deployplane/crd/schema.py) and regenerate.\n"
)


def _render(crd: Schema) -> str:
    # Insertion order is deterministic (model field order), and reads better than sorted.
    body = yaml.safe_dump(crd, sort_keys=False, width=100, allow_unicode=True)
    return _HEADER + body


def rendered_files() -> dict[str, str]:
    """Relative path (POSIX) -> file content, for every file the generator owns."""
    out: dict[str, str] = {}
    for crd in custom_resource_definitions():
        text = _render(crd)
        for directory in OUTPUT_DIRS:
            out[f"{directory}/{crd['metadata']['name']}.yaml"] = text
    return out


def _default_root() -> Path:
    checkout = Path(__file__).resolve().parents[3]
    return checkout if (checkout / "pyproject.toml").is_file() else Path.cwd()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m deployplane.crd.schema",
        description="Write (or with --check, verify) the deployplane CRDs.",
    )
    parser.add_argument(
        "--check", action="store_true", help="exit 1 with a diff if the files are stale"
    )
    parser.add_argument(
        "out_dir",
        nargs="?",
        type=Path,
        default=None,
        help="root under which crds/ and charts/deployplane/crds/ are written "
        "(default: the repository checkout)",
    )
    args = parser.parse_args(argv)
    root: Path = args.out_dir or _default_root()
    stale = 0
    for relative, text in rendered_files().items():
        target = root / relative
        if args.check:
            current = target.read_text() if target.is_file() else ""
            if current != text:
                stale += 1
                sys.stdout.writelines(
                    difflib.unified_diff(
                        current.splitlines(keepends=True),
                        text.splitlines(keepends=True),
                        fromfile=f"{relative} (committed)",
                        tofile=f"{relative} (generated)",
                    )
                )
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text)
            print(f"wrote {target}")
    if stale:
        print(
            f"{stale} CRD file(s) out of date: run `python -m deployplane.crd.schema`",
            file=sys.stderr,
        )
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
