"""What the plan asks of Kubernetes: reads, and the server-side dry-run, which writes
nothing (`dryRun=All`: admission, defaults, the schema and the CEL rules run, nothing is
stored).

The dry-run is what the apiserver would make of a manifest: a new object is created
(POST), a live one replaced by it (PUT, under the live object's resourceVersion), its
spec the manifest's whole (as a GitOps tool's sync makes it), its labels and annotations
merged over the live ones (the operator's own, its finalizer and marker, stay). The
answer is the object with the CRD's defaults and the generation it would have; a
refusal is the apiserver's `Status`, its causes field by field.

`PlanReader` is the operator's `KubeReader` over this cluster as the manifests would
leave it: their Secrets, Listeners and connections over the live ones.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Final, Protocol

from kubernetes import client
from kubernetes.client.exceptions import ApiException

from deployplane.cli.commands.kube import TIMEOUT, KubeAccess, KubeError
from deployplane.cli.commands.plan.manifests import Manifest, Manifests
from deployplane.kube.paths import GROUP, VERSION

__all__ = ["FIELD_MANAGER", "Cluster", "ClusterView", "DryRun", "PlanReader", "replacing"]

FIELD_MANAGER: Final = "deployplane-plan"
_REFUSALS: Final = frozenset({400, 422})
"""What the apiserver answers a manifest it will not take (a BadRequest: an unknown
field under Strict validation; Invalid: the schema, CEL rules, immutable fields)."""


@dataclass(frozen=True)
class DryRun:
    """The object the apiserver would store, or its refusal (a `Status`)."""

    body: dict[str, Any] | None = None
    refusal: Mapping[str, Any] | None = None


class ClusterView(Protocol):
    """What the plan asks of a cluster (`Cluster`; an in-memory one in the tests)."""

    def live(self, plural: str, namespace: str, name: str) -> Mapping[str, Any] | None:
        """The live object, or None."""
        ...

    def listed(self, plural: str, namespace: str, selector: str | None = None) -> list[Any]:
        """The live objects of a kind in a namespace (matching the label selector)."""
        ...

    def secret(self, namespace: str, name: str) -> Mapping[str, str] | None:
        """A Secret's decoded data, or None."""
        ...

    def namespace_labels(self, name: str) -> Mapping[str, str] | None:
        """A namespace's labels, or None."""
        ...

    def dry_run(self, plural: str, manifest: Manifest) -> DryRun:
        """The manifest as the apiserver would store it, or its refusal."""
        ...


@dataclass
class Cluster:
    """The plan's requests to one cluster: GETs, lists, and dry-runs."""

    access: KubeAccess
    _live: dict[tuple[str, str, str], Mapping[str, Any] | None] = field(default_factory=dict)

    def live(self, plural: str, namespace: str, name: str) -> Mapping[str, Any] | None:
        key = (plural, namespace, name)
        if key not in self._live:
            self._live[key] = self.access.custom_resource(plural, namespace, name)
        return self._live[key]

    def listed(self, plural: str, namespace: str, selector: str | None = None) -> list[Any]:
        """The live objects of a kind in a namespace (matching the label selector)."""
        custom = client.CustomObjectsApi(self.access.api)
        read = partial(
            custom.list_namespaced_custom_object,
            GROUP,
            VERSION,
            namespace,
            plural,
            label_selector=selector or "",
            _request_timeout=TIMEOUT,
        )
        found = self._call(f"list {plural} in {namespace}", read)
        return list((found or {}).get("items") or [])

    def secret(self, namespace: str, name: str) -> Mapping[str, str] | None:
        return self.access.secret_data(namespace, name)

    def namespace_labels(self, name: str) -> Mapping[str, str] | None:
        core = client.CoreV1Api(self.access.api)
        found = self._call(
            f"get namespace {name}",
            partial(core.read_namespace, name, _request_timeout=TIMEOUT),
        )
        if found is None:
            return None
        labels: Mapping[str, str] = (found.get("metadata") or {}).get("labels") or {}
        return labels

    def dry_run(self, plural: str, manifest: Manifest) -> DryRun:
        """The manifest as the apiserver would store it, or its refusal."""
        custom = client.CustomObjectsApi(self.access.api)
        live = self.live(plural, manifest.namespace, manifest.name)
        options: dict[str, Any] = {
            "dry_run": "All",
            "field_manager": FIELD_MANAGER,
            "field_validation": "Strict",
            "_request_timeout": TIMEOUT,
        }
        where = (GROUP, VERSION, manifest.namespace, plural)
        if live is None:
            call = partial(custom.create_namespaced_custom_object, *where, manifest.body, **options)
        else:
            body = replacing(live, manifest.body)
            call = partial(
                custom.replace_namespaced_custom_object, *where, manifest.name, body, **options
            )
        what = f"dry-run of {plural}/{manifest.name} in {manifest.namespace}"
        try:
            answer = call()
        except ApiException as exc:
            status = _status_of(exc)
            if exc.status in _REFUSALS and status is not None:
                return DryRun(refusal=status)
            detail = (status or {}).get("message") or exc.reason
            raise KubeError(f"{what}: {exc.status} {detail}", exc.status) from exc
        except Exception as exc:  # urllib3's connection errors, TLS: one line
            raise KubeError(f"{what}: {type(exc).__name__}: {exc}") from exc
        body_answer: dict[str, Any] = self.access.api.sanitize_for_serialization(answer)
        return DryRun(body=body_answer)

    def _call(self, what: str, read: Callable[[], Any]) -> Any:
        try:
            answer = read()
        except ApiException as exc:
            if exc.status == 404:
                return None
            raise KubeError(f"{what}: {exc.status} {exc.reason}", exc.status) from exc
        except Exception as exc:
            raise KubeError(f"{what}: {type(exc).__name__}: {exc}") from exc
        return self.access.api.sanitize_for_serialization(answer)


def replacing(live: Mapping[str, Any], manifest: Mapping[str, Any]) -> dict[str, Any]:
    """The live object with the manifest applied: the manifest's spec whole, its labels
    and annotations over the live ones, the rest of the metadata the live object's
    (resourceVersion included: the dry-run is refused if it moved meanwhile)."""
    meta = {k: v for k, v in (live.get("metadata") or {}).items() if k != "managedFields"}
    wanted = manifest.get("metadata") or {}
    for key in ("labels", "annotations"):
        merged = {**(meta.get(key) or {}), **(wanted.get(key) or {})}
        if merged:
            meta[key] = merged
    return {
        "apiVersion": manifest.get("apiVersion") or live.get("apiVersion"),
        "kind": manifest.get("kind") or live.get("kind"),
        "metadata": meta,
        "spec": manifest.get("spec") or {},
    }


def _status_of(exc: ApiException) -> dict[str, Any] | None:
    try:
        status = json.loads(exc.body or "")
    except (TypeError, ValueError):
        return None
    return status if isinstance(status, dict) and status.get("kind") == "Status" else None


@dataclass
class PlanReader:
    """The operator's `KubeReader` (`externals.kube`) over the cluster as applying the
    manifests would leave it: a Secret, a Listener's spec or a new object of the
    manifests counts over the live one. Reads only."""

    cluster: ClusterView
    manifests: Manifests
    plurals: Mapping[str, str]
    """plural -> kind, of this project's kinds."""

    async def read_secret(self, namespace: str, name: str) -> Mapping[str, str] | None:
        planned = self.manifests.secrets.get((namespace, name))
        return planned if planned is not None else self.cluster.secret(namespace, name)

    async def read_custom_status(
        self, namespace: str, plural: str, name: str
    ) -> Mapping[str, Any] | None:
        live = self.cluster.live(plural, namespace, name)
        if live is not None:
            status: Mapping[str, Any] = live.get("status") or {}
            return status
        # New with this change: it will be there, without a status yet.
        return {} if self._manifest(plural, namespace, name) is not None else None

    async def read_object(self, plural: str, namespace: str, name: str) -> dict[str, Any] | None:
        live = self.cluster.live(plural, namespace, name)
        planned = self._manifest(plural, namespace, name)
        if planned is None:
            return None if live is None else dict(live)
        return {**dict(live or {}), "spec": planned.body.get("spec") or {}}

    async def read_namespace_labels(self, name: str) -> Mapping[str, str] | None:
        return self.cluster.namespace_labels(name)

    def _manifest(self, plural: str, namespace: str, name: str) -> Manifest | None:
        kind = self.plurals.get(plural)
        return None if kind is None else self.manifests.find(kind, namespace, name)
