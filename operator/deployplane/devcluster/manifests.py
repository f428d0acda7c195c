"""Apply YAML manifests of any kind, as `kubectl apply --server-side` does.

Tests feed CRDs, RBAC and custom resources through one helper. Server-side apply keeps
it idempotent (applying twice is an update, not a conflict). A CRD is only useful once
it is Established and discovery lists its kind, so `apply` waits for both before
returning; the next manifest may then be an object of that kind.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterable
from typing import Any

import yaml
from kubernetes import client, dynamic
from kubernetes.dynamic.exceptions import NotFoundError, ResourceNotFoundError

FIELD_MANAGER = "deployplane-dev"
Manifest = str | dict[str, Any] | Iterable[dict[str, Any]]
_CRD_KIND = ("apiextensions.k8s.io/v1", "CustomResourceDefinition")


def documents(manifest: Manifest) -> list[dict[str, Any]]:
    """The objects of a manifest: a YAML string (multi-document), a dict or dicts."""
    if isinstance(manifest, str):
        docs = [d for d in yaml.safe_load_all(manifest) if d]
    elif isinstance(manifest, dict):
        docs = [manifest]
    else:
        docs = list(manifest)
    objects: list[dict[str, Any]] = []
    for doc in docs:
        # A `kind: List` (as `kubectl get -o yaml` prints) stands for its items.
        objects.extend((doc.get("items") or []) if doc.get("kind") == "List" else [doc])
    return objects


class Applier:
    """Server-side apply through the dynamic client, remembering what it applied."""

    def __init__(self, api: client.ApiClient, *, wait_timeout: float = 30.0) -> None:
        # The dynamic client is unannotated; hold it as Any in one place.
        dynamic_client: Any = dynamic.DynamicClient
        self._dynamic: Any = dynamic_client(api)
        self.wait_timeout = wait_timeout
        # (apiVersion, kind, namespace, name) of every applied object, in order.
        self.applied: list[tuple[str, str, str | None, str]] = []

    def _resource(self, api_version: str, kind: str) -> Any:
        deadline = time.monotonic() + self.wait_timeout
        while True:
            try:
                return self._dynamic.resources.get(api_version=api_version, kind=kind)
            except ResourceNotFoundError:
                # Discovery is cached: a CRD applied a moment ago is not in it yet.
                if time.monotonic() > deadline:
                    raise
                self._dynamic.resources.invalidate_cache()
                time.sleep(0.1)

    def apply(self, manifest: Manifest, *, namespace: str | None = None) -> list[dict[str, Any]]:
        """Apply every object; namespaced ones without a namespace go to `namespace`."""
        results = []
        for obj in documents(manifest):
            api_version, kind = obj["apiVersion"], obj["kind"]
            resource = self._resource(api_version, kind)
            ns = None
            if resource.namespaced:
                ns = obj.get("metadata", {}).get("namespace") or namespace
                if ns is None:
                    raise ValueError(f"{kind} {obj['metadata']['name']} needs a namespace")
            applied = self._dynamic.server_side_apply(
                resource,
                body=obj,
                namespace=ns,
                field_manager=FIELD_MANAGER,
                force_conflicts=True,
            )
            name = str(applied.metadata.name)
            self.applied.append((api_version, kind, ns, name))
            if (api_version, kind) == _CRD_KIND:
                self._wait_crd(applied.to_dict())
            results.append(applied.to_dict())
        return results

    def _wait_crd(self, crd: dict[str, Any]) -> None:
        name = crd["metadata"]["name"]
        crds = self._resource(*_CRD_KIND)
        deadline = time.monotonic() + self.wait_timeout
        while True:
            current = crds.get(name=name).to_dict()
            conditions = current.get("status", {}).get("conditions") or []
            if any(c["type"] == "Established" and c["status"] == "True" for c in conditions):
                break
            if time.monotonic() > deadline:
                raise TimeoutError(f"CRD {name} not Established after {self.wait_timeout}s")
            time.sleep(0.05)
        spec = crd["spec"]
        for version in spec["versions"]:
            if version.get("served", True):
                self._resource(f"{spec['group']}/{version['name']}", spec["names"]["kind"])

    def delete(self, api_version: str, kind: str, name: str, namespace: str | None = None) -> None:
        """Delete one object; absent is fine (background propagation, no waiting)."""
        resource = self._resource(api_version, kind)
        with contextlib.suppress(NotFoundError):
            self._dynamic.delete(
                resource, name=name, namespace=namespace if resource.namespaced else None
            )

    def delete_applied(self, *, keep_namespace: str | None = None) -> None:
        """Delete what was applied, newest first, except objects in `keep_namespace`
        (deleting that namespace takes them along)."""
        for api_version, kind, ns, name in reversed(self.applied):
            if ns is None or ns != keep_namespace:
                self.delete(api_version, kind, name, ns)
        self.applied.clear()
