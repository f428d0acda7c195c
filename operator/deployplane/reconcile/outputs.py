"""Outputs for workloads: `spec.writeOutputsTo.configMapName` (ASO's operatorSpec
configMaps, Crossplane's writeConnectionSecretToRef, ACK's FieldExport).

A kind's status says what it exports (`ResourceStatus.outputs()`); the pass writes it
into a ConfigMap of the resource's namespace, controlled by the resource (an
ownerReference with `controller: true` and `blockOwnerDeletion: true`, so the garbage
collector deletes it with the resource). Written in the pass that changes those values
and never otherwise: a pass reads the ConfigMap only when the values differ from what
this process last saw in it, or at a resync (which repairs a hand edit). A ConfigMap
of that name that the resource does not control is never touched: the resource is
`Synced=False` (ConfigMapNotOwned). Removing or renaming the field leaves the old
ConfigMap as it is, still owned (docs/platform.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, Protocol

CONFIG_MAP_NOT_OWNED: Final = "ConfigMapNotOwned"
CONFIG_MAP_WRITE_FAILED: Final = "ConfigMapWriteFailed"


class ConfigMapError(Exception):
    """A ConfigMap request the apiserver refused or did not answer (RBAC, a conflict,
    a timeout): the message names the request and the apiserver's own reason."""


class ConfigMapStore(Protocol):
    """The ConfigMap reads and writes of the outputs (`kube.api.KubernetesApi`); a
    failed request raises `ConfigMapError`."""

    async def read_config_map(self, namespace: str, name: str) -> dict[str, Any] | None: ...

    async def create_config_map(self, namespace: str, body: Mapping[str, Any]) -> None: ...

    async def patch_config_map_data(
        self, namespace: str, name: str, data: Mapping[str, str], resource_version: str | None
    ) -> None: ...


def target(body: Mapping[str, Any]) -> str | None:
    """The ConfigMap the resource's spec names, if any."""
    spec = body.get("spec") or {}
    name = (spec.get("writeOutputsTo") or {}).get("configMapName")
    return str(name) if name else None


def owner_reference(body: Mapping[str, Any]) -> dict[str, Any]:
    """The resource as the ConfigMap's controller. `blockOwnerDeletion`: a foreground
    deletion of the resource waits for the ConfigMap (where the apiserver enforces owner
    references' permissions, this needs `update` on the kind's `/finalizers`)."""
    meta = body.get("metadata") or {}
    return {
        "apiVersion": body.get("apiVersion"),
        "kind": body.get("kind"),
        "name": meta.get("name"),
        "uid": meta.get("uid"),
        "controller": True,
        "blockOwnerDeletion": True,
    }


def controlled_by(config_map: Mapping[str, Any], uid: str) -> bool:
    refs = (config_map.get("metadata") or {}).get("ownerReferences") or []
    return any(r.get("uid") == uid and r.get("controller") for r in refs)


def config_map(body: Mapping[str, Any], name: str, data: Mapping[str, str]) -> dict[str, Any]:
    """The ConfigMap to create: the outputs, controlled by the resource."""
    meta = body.get("metadata") or {}
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": name,
            "namespace": meta.get("namespace"),
            "labels": {"app.kubernetes.io/managed-by": "deployplane"},
            "ownerReferences": [owner_reference(body)],
        },
        "data": dict(data),
    }


@dataclass(frozen=True)
class Published:
    """What the ConfigMap holds after a publish, or why it was left alone."""

    seen: tuple[str, dict[str, str]] | None
    """(name, data) as the ConfigMap now holds it (None: not ours, or not known)."""
    problem: str | None = None
    reason: str = CONFIG_MAP_NOT_OWNED
    """The Synced reason of `problem`."""


async def publish(
    store: ConfigMapStore,
    body: Mapping[str, Any],
    name: str,
    data: dict[str, str],
    *,
    seen: tuple[str, dict[str, str]] | None,
    reread: bool,
) -> Published:
    """Bring ConfigMap `name` to `data`, unless `seen` (what this process last saw in it)
    already says so and no `reread` is asked: then no request at all. A failed request
    is a problem (`ConfigMapWriteFailed`), not a failed pass: the status the pass
    computed is still written, and the next pass reads the ConfigMap again."""
    if seen == (name, data) and not reread:
        return Published(seen)
    try:
        return await _publish(store, body, name, data)
    except ConfigMapError as exc:
        return Published(None, str(exc), CONFIG_MAP_WRITE_FAILED)


async def _publish(
    store: ConfigMapStore, body: Mapping[str, Any], name: str, data: dict[str, str]
) -> Published:
    meta = body.get("metadata") or {}
    namespace, uid = meta["namespace"], meta.get("uid") or ""
    current = await store.read_config_map(namespace, name)
    if current is None:
        await store.create_config_map(namespace, config_map(body, name, data))
    elif not controlled_by(current, uid):
        kind = str(body.get("kind") or "resource").lower()
        return Published(
            None,
            f"configmap {name} exists and is not owned by {kind} {meta.get('name')}; "
            "it is left as it is (rename spec.writeOutputsTo.configMapName, or delete it)",
        )
    elif (current.get("data") or {}) != data:
        version = (current.get("metadata") or {}).get("resourceVersion")
        await store.patch_config_map_data(namespace, name, data, version)
    return Published((name, data))
