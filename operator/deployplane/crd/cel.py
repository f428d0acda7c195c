"""CEL validation rules (`x-kubernetes-validations`) and the helpers that spell them.

The rules implement the rules of ARCHITECTURE.md ("Custom resources") so that
`kubectl apply` itself refuses a bad spec, with a message that names the field. Each
kind declares its rules by JSON path under `spec` (in its module in `deployplane.kinds`);
`attach_rules` puts them on the generated schema, and a path that no longer exists in
the models fails generation instead of silently dropping a rule.

A field that names the resource on the control plane for good (a deployment's name, a
listener's computeId) may be corrected while nothing exists there for it, and is fixed
after: `fixed_once_created`, a rule on the whole object (its `self` is the object, so it
reads the status the spec rules cannot see), keyed on the id the operator records in
the status once the remote object exists. On an update of the object the apiserver
keeps the stored status (the status subresource), so the rule reads what the operator
wrote, never what the update carries; no GitOps tool writes the status.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from deployplane.crd.openapi import Schema

__all__ = [
    "FORBIDDEN",
    "REQUIRED",
    "Rule",
    "Rules",
    "at_most",
    "attach_rules",
    "fixed_once_created",
    "forbidden_for",
    "has",
    "immutable",
    "present",
    "required_for",
]


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


Rules = Mapping[str, Sequence[Rule]]
"""JSON path under `spec` ("" for the spec itself, "a.b" for a nested field) -> rules."""

REQUIRED: Final = "FieldValueRequired"
FORBIDDEN: Final = "FieldValueForbidden"


def immutable(field_name: str) -> Rule:
    return Rule("self == oldSelf", f"spec.{field_name} is immutable")


def has(path: str) -> str:
    """`has()` guarded on each parent: `has(a.b.c)` errors when `a.b` is absent."""
    parts = path.split(".")
    return " && ".join(f"has(self.{'.'.join(parts[: i + 1])})" for i in range(len(parts)))


def present(path: str) -> str:
    """A string field set and not empty: the control plane takes "" for a missing value."""
    return f"{has(path)} && self.{path} != ''"


def required_for(source: str, path: str) -> Rule:
    """A string field the control plane requires (not empty) for deployments of `source`."""
    return Rule(
        f"self.source != '{source}' || ({present(path)})",
        f"spec.{path} is required when spec.source is {source} (and not empty)",
        field_path=f".{path}",
        reason=REQUIRED,
    )


def forbidden_for(source: str, path: str, why: str) -> Rule:
    return Rule(
        f"self.source != '{source}' || !({has(path)})",
        f"spec.{path} is not allowed when spec.source is {source} ({why})",
        field_path=f".{path}",
        reason=FORBIDDEN,
    )


def at_most(parent: str, low: str, high: str, why: str) -> Rule:
    """A rule on the object at spec path `parent`: its `low` is not above its `high`
    when both are set (a minimum and a maximum, a request and a limit). The refusal is
    reported at `low`."""
    return Rule(
        f"!has(self.{low}) || !has(self.{high}) || self.{low} <= self.{high}",
        f"spec.{parent}.{low} must not be above spec.{parent}.{high} ({why})",
        field_path=f".{low}",
    )


def attach_rules(spec: Schema, rules: Rules) -> None:
    """Put each path's rules on its node of the spec schema (in place)."""
    for path, entries in rules.items():
        node = spec
        for part in filter(None, path.split(".")):
            try:
                node = node["properties"][part]
            except KeyError:
                raise KeyError(f"CEL rule path spec.{path} is not in the schema") from None
        node["x-kubernetes-validations"] = [r.as_dict() for r in entries]


def _present(root: str, path: str) -> str:
    """`has()` of `root.path`, guarded on each parent."""
    parts = path.split(".")
    return " && ".join(f"has({root}.{'.'.join(parts[: i + 1])})" for i in range(len(parts)))


def fixed_once_created(
    field: str, id_field: str, noun: str, kind: str, *, presence: str = "required"
) -> Rule:
    """A rule on the whole object: `spec.<field>` may change (be corrected in git) while
    `status.<id_field>` is unset, nothing on the control plane being the resource's
    yet; then never. `presence`: "required" (always there), "optional" (neither added
    nor removed then either), "once set" (may be added later, never removed)."""
    path = f"spec.{field}"
    new, old = _present("self", path), _present("oldSelf", path)
    same = f"self.{path} == oldSelf.{path}"
    if presence == "required":
        unchanged, what = same, "cannot change"
    elif presence == "optional":
        unchanged = f"({new}) == ({old}) && (!({new}) || {same})"
        what = "cannot be added, removed or changed"
    else:
        unchanged = f"!({old}) || (({new}) && {same})"
        what = "cannot be removed or changed"
    created = f"has(oldSelf.status) && has(oldSelf.status.{id_field})"
    return Rule(
        f"!({created}) || ({unchanged})",
        f"{path} {what} once the {noun} exists on the control plane (status.{id_field} "
        f"is set); until then it may be corrected. To change it now, delete the {kind} "
        "and create it again",
        field_path=f".{path}",
    )
