"""Control-plane resources as custom resources (`deployplane export`): pure functions.

`export()` turns what the control plane reports (`Deployment`, `Listener`) into
AgentDeployment and Listener objects that `kubectl apply` accepts as they are, set up to
adopt (ASO's `asoctl import`, Config Connector's `bulk-export`):

- the id to adopt (`spec.deploymentId`, `spec.listenerId`) and `spec.managementPolicy`
  (`ObserveOnly` unless told to manage: the operator then never writes); a deployment
  made for an agent gets `spec.agent`, never a `spec.name`;
- exactly the fields the operator compares (externals/*/diff.py), each with the value
  the service reports, so that after apply it finds nothing to change even in `Full`;
  fields a spec may not carry are left out (the service sets a git_host deployment's
  URL; a source's fields of the other source; read-only ones such as the built commit),
  which the operator then leaves alone;
- `listenerRef` instead of the raw `listenerId` where that Listener is exported too;
- every deployment secret as a `secretKeyRef` to a placeholder Secret named after the
  resource, key = the secret's name. Values are write-only on the service: they are
  never read, so never written; `Export.secrets` lists the Secrets the user must create.

Deployments the kind cannot describe (the vendor CLI's internal_* sources) or that are
being deleted are skipped, each with its reason.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Final
from uuid import UUID

from pydantic import BaseModel
from pydantic_core import to_jsonable_python

from deployplane.api.models import (
    MANAGED_SOURCES,
    Deployment,
    DeploymentStatus,
    Listener,
    Source,
    camelize,
)
from deployplane.cli.commands.export.names import (
    ExportNameError,
    Named,
    is_secret_key,
    unique_names,
)
from deployplane.kube.paths import GROUP, VERSION

__all__ = [
    "API_VERSION",
    "Export",
    "ExportNameError",
    "Exported",
    "Policy",
    "SecretToCreate",
    "Skipped",
    "cr_json",
    "deployment_cr",
    "export",
    "listener_cr",
]

API_VERSION: Final = f"{GROUP}/{VERSION}"


class Policy(StrEnum):
    """`spec.managementPolicy` of what is exported."""

    FULL = "Full"
    OBSERVE_ONLY = "ObserveOnly"


# sourceConfig fields a spec of each source may not carry (the kind's CEL rules): the
# service sets a git_host deployment's URL; the git fields mean nothing to an image.
_NOT_IN_SPEC: Final[dict[str, frozenset[str]]] = {
    Source.GIT_HOST.value: frozenset({"custom_url"}),
    Source.EXTERNAL_DOCKER.value: frozenset(
        {"integration_id", "repo_url", "build_on_push", "deployment_type"}
    ),
}
# The revision fields each source's spec carries (the ones the operator patches).
_REVISION_FIELDS: Final[dict[str, tuple[str, ...]]] = {
    Source.GIT_HOST.value: ("repo_ref", "graph_config_path"),
    Source.EXTERNAL_DOCKER.value: ("image_uri",),
}


@dataclass(frozen=True)
class SecretToCreate:
    """A placeholder Secret an exported resource reads its secrets from."""

    name: str
    keys: tuple[str, ...]
    owner: str
    """`agentdeployment/NAME`, the resource that reads it."""


@dataclass(frozen=True)
class Exported:
    kind: str
    name: str
    body: dict[str, Any]
    secret: SecretToCreate | None = None

    @property
    def reference(self) -> str:
        return f"{self.kind.lower()}/{self.name}"


@dataclass(frozen=True)
class Skipped:
    what: str
    reason: str


@dataclass(frozen=True)
class Export:
    resources: list[Exported]
    skipped: list[Skipped]

    @property
    def secrets(self) -> list[SecretToCreate]:
        return [r.secret for r in self.resources if r.secret is not None]


def cr_json(model: BaseModel, exclude: frozenset[str] = frozenset()) -> dict[str, Any]:
    """A model as a custom resource writes it: the CRD's camelCase property names (as
    `deployplane.crd.openapi` makes them), unset and null fields left out, the contents
    of free-form objects and extra fields kept exactly as given."""
    out: dict[str, Any] = {}
    for name, info in type(model).model_fields.items():
        value = getattr(model, name)
        if name in exclude or value is None:
            continue
        out[info.alias if isinstance(info.alias, str) else camelize(name)] = _value(value)
    for name, value in (model.model_extra or {}).items():
        if value is not None:
            out[name] = to_jsonable_python(value)
    return out


def _value(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return cr_json(value)
    if isinstance(value, list):
        return [_value(item) for item in value]
    return to_jsonable_python(value)


def _object(kind: str, name: str, namespace: str | None, spec: dict[str, Any]) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name}
    if namespace:
        metadata["namespace"] = namespace
    return {"apiVersion": API_VERSION, "kind": kind, "metadata": metadata, "spec": spec}


def listener_cr(
    listener: Listener, name: str, policy: Policy, namespace: str | None = None
) -> dict[str, Any]:
    """The Listener adopting `listener`, named `name`."""
    spec: dict[str, Any] = {
        "managementPolicy": policy.value,
        "listenerId": str(listener.id),
        **cr_json(listener, exclude=frozenset({"id", "created_at", "updated_at"})),
    }
    return _object("Listener", name, namespace, spec)


def deployment_cr(
    dep: Deployment,
    name: str,
    policy: Policy,
    listener_names: Mapping[UUID, str],
    namespace: str | None = None,
) -> dict[str, Any]:
    """The AgentDeployment adopting `dep`, named `name`; a listener of `listener_names`
    (id -> Listener name) becomes a `listenerRef`. Its secrets read the Secret `name`."""
    source = str(dep.source)
    if source not in _REVISION_FIELDS:
        raise ValueError(f"deployment {dep.name}: source {source} cannot be an AgentDeployment")
    spec: dict[str, Any] = {"managementPolicy": policy.value, "deploymentId": str(dep.id)}
    if dep.agent is not None:  # the control plane named it: the agent, never a name
        spec["agent"] = cr_json(dep.agent)
    elif name != dep.name:
        spec["name"] = dep.name
    spec["source"] = source
    config = cr_json(dep.source_config, _NOT_IN_SPEC[source]) if dep.source_config else {}
    listener_id = dep.source_config.listener_id if dep.source_config else None
    if listener_id is not None and listener_id in listener_names:
        config = _replaced(
            config, "listenerId", "listenerRef", {"name": listener_names[listener_id]}
        )
    if config:
        spec["sourceConfig"] = config
    reported = dep.source_revision_config
    revision = {
        camelize(field): value
        for field in _REVISION_FIELDS[source]
        if (value := getattr(reported, field, None)) is not None
    }
    if revision:
        spec["sourceRevisionConfig"] = revision
    if dep.secrets:
        spec["secrets"] = [
            {"name": s.name, "valueFrom": {"secretKeyRef": {"name": name, "key": s.name}}}
            for s in dep.secrets
        ]
    if dep.secret_references and dep.source == Source.EXTERNAL_DOCKER:
        spec["secretReferences"] = [cr_json(r) for r in dep.secret_references]
    return _object("AgentDeployment", name, namespace, spec)


def _replaced(obj: dict[str, Any], key: str, new_key: str, value: Any) -> dict[str, Any]:
    """`obj` with `key` replaced by `new_key: value` in its place (files read alike)."""
    return {(new_key if k == key else k): (value if k == key else v) for k, v in obj.items()}


def _skip_reason(dep: Deployment) -> str | None:
    if dep.source not in MANAGED_SOURCES:
        return f"source {dep.source}: an AgentDeployment manages git_host and external_docker only"
    if dep.status is DeploymentStatus.AWAITING_DELETE:
        return "it is being deleted"
    for secret in dep.secrets or []:
        if not is_secret_key(secret.name):
            return f"its secret name {secret.name!r} cannot be a key of a Kubernetes Secret"
    return None


def export(
    deployments: Sequence[Deployment],
    listeners: Sequence[Listener],
    policy: Policy = Policy.OBSERVE_ONLY,
    namespace: str | None = None,
) -> Export:
    """Listeners first (what deployments refer to), then deployments, each kind sorted by
    name. Raises `ExportNameError` when two names cannot be told apart."""
    skipped: list[Skipped] = []
    kept: list[Deployment] = []
    for dep in deployments:
        reason = _skip_reason(dep)
        if reason is None:
            kept.append(dep)
        else:
            skipped.append(Skipped(f"deployment {dep.name} ({dep.id})", reason))
    listener_names = unique_names([Named(li.id, li.compute_id) for li in listeners], "listener")
    dep_names = unique_names([Named(d.id, d.name) for d in kept], "deployment")
    out = [
        Exported("Listener", name, listener_cr(li, name, policy, namespace))
        for li in listeners
        for name in [listener_names[li.id]]
    ]
    for dep in kept:
        name = dep_names[dep.id]
        body = deployment_cr(dep, name, policy, listener_names, namespace)
        keys = tuple(s.name for s in dep.secrets or [])
        secret = SecretToCreate(name, keys, f"agentdeployment/{name}") if keys else None
        out.append(Exported("AgentDeployment", name, body, secret))
    out.sort(key=lambda item: (item.kind != "Listener", item.name))
    return Export(out, skipped)
