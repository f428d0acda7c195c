"""The agent's Kubernetes calls: server-side apply, get, list, delete, over aiohttp.

Built on the operator's `KubernetesApi` (same configuration loading, same aiohttp
session on the event loop), because the agent is one asyncio loop too. Every write is
a server-side apply under the agent's own field manager (`FIELD_MANAGER`), so fields
other managers own (an HPA's replica count, a user's label) are left alone, and an
apply of unchanged objects changes nothing. `SCALE_MANAGER` is the manager that holds
an autoscaled Deployment's first replica count until its autoscaler takes it
(applier.py).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Protocol
from urllib.parse import quote

from deployplane.kube.api import KubernetesApi

__all__ = [
    "FIELD_MANAGER",
    "SCALE_MANAGER",
    "Cluster",
    "ClusterApi",
    "ClusterError",
    "object_path",
]

FIELD_MANAGER = "deployplane-listener-agent"
SCALE_MANAGER = "deployplane-listener-agent-initial-replicas"

Obj = dict[str, Any]

_PLURALS = {
    "ConfigMap": "configmaps",
    "Secret": "secrets",
    "Service": "services",
    "Pod": "pods",
    "PersistentVolumeClaim": "persistentvolumeclaims",
    "Deployment": "deployments",
    "StatefulSet": "statefulsets",
    "HorizontalPodAutoscaler": "horizontalpodautoscalers",
    "Ingress": "ingresses",
    "NetworkPolicy": "networkpolicies",
}


class ClusterError(Exception):
    """The apiserver refused a call; `status` is its HTTP status (0: no answer)."""

    def __init__(self, message: str, *, status: int) -> None:
        super().__init__(message)
        self.status = status

    @property
    def retryable(self) -> bool:
        """A refusal the same call may get past later (not a bad object or a denial)."""
        return self.status in (0, 409, 429) or self.status >= 500


class Cluster(Protocol):
    """What the agent does to a cluster; `FakeCluster` in tests, `ClusterApi` for real."""

    async def apply(
        self, obj: Mapping[str, Any], *, field_manager: str = FIELD_MANAGER, force: bool = True
    ) -> Obj:
        """Server-side apply of `obj` as `field_manager`; `force` takes the fields another
        manager owns (a conflict is a 409 ClusterError otherwise)."""
        ...

    async def get(self, api_version: str, kind: str, namespace: str, name: str) -> Obj | None: ...

    async def list(
        self, api_version: str, kind: str, namespace: str, selector: Mapping[str, str]
    ) -> list[Obj]: ...

    async def delete(self, api_version: str, kind: str, namespace: str, name: str) -> bool: ...

    async def served(self, api_version: str, kind: str) -> bool: ...

    async def pod_log(
        self,
        namespace: str,
        pod: str,
        container: str,
        *,
        previous: bool = True,
        tail_lines: int | None = None,
        limit_bytes: int | None = None,
    ) -> str:
        """The container's log: of its previous run (the one that exited) or, with
        `previous=False`, of the running one; its last `tail_lines` lines, or its first
        `limit_bytes` bytes."""
        ...


def object_path(api_version: str, kind: str, namespace: str, name: str | None = None) -> str:
    """The REST path of a namespaced object (or of its collection when name is None)."""
    plural = _PLURALS.get(kind) or kind.lower() + "s"
    root = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
    path = f"{root}/namespaces/{quote(namespace, safe='')}/{plural}"
    return path if name is None else f"{path}/{quote(name, safe='')}"


class ClusterApi(KubernetesApi):
    """`Cluster` over the apiserver's REST API."""

    def _headers(self, content_type: str | None = None) -> dict[str, str]:
        headers = {"Accept": "application/json"}
        if content_type:
            headers["Content-Type"] = content_type
        # Asked per request: in a pod the token is refreshed (see KubernetesApi).
        bearer = self._configuration.auth_settings().get("BearerToken") or {}
        if bearer.get("value"):
            headers["Authorization"] = bearer["value"]
        return headers

    async def _call(
        self,
        method: str,
        path: str,
        *,
        body: Any = None,
        params: Mapping[str, str] | None = None,
        content_type: str | None = None,
    ) -> Obj | None:
        """The answer's JSON, or None for 404; ClusterError for any other refusal."""
        data = None if body is None else json.dumps(body)
        try:
            async with self._session().request(
                method, path, data=data, params=params, headers=self._headers(content_type)
            ) as response:
                text = await response.text()
                if response.status == 404:
                    return None
                if response.status >= 400:
                    raise ClusterError(
                        _reason(method, path, response.status, text), status=response.status
                    )
                answer: Obj = json.loads(text) if text else {}
                return answer
        except (OSError, TimeoutError) as exc:
            raise ClusterError(f"{method} {path}: {type(exc).__name__}", status=0) from exc

    async def apply(
        self, obj: Mapping[str, Any], *, field_manager: str = FIELD_MANAGER, force: bool = True
    ) -> Obj:
        meta = obj["metadata"]
        path = object_path(obj["apiVersion"], obj["kind"], meta["namespace"], meta["name"])
        params = {"fieldManager": field_manager, "force": "true" if force else "false"}
        # JSON is YAML: the apply-patch content type takes it as is.
        answer = await self._call(
            "PATCH", path, body=obj, params=params, content_type="application/apply-patch+yaml"
        )
        if answer is None:  # the namespace does not exist
            raise ClusterError(f"PATCH {path}: namespace {meta['namespace']} not found", status=404)
        return answer

    async def get(self, api_version: str, kind: str, namespace: str, name: str) -> Obj | None:
        return await self._call("GET", object_path(api_version, kind, namespace, name))

    async def list(
        self, api_version: str, kind: str, namespace: str, selector: Mapping[str, str]
    ) -> list[Obj]:
        params = {"labelSelector": ",".join(f"{k}={v}" for k, v in sorted(selector.items()))}
        answer = await self._call("GET", object_path(api_version, kind, namespace), params=params)
        return list((answer or {}).get("items") or [])

    async def delete(self, api_version: str, kind: str, namespace: str, name: str) -> bool:
        """Deletes in the foreground: the object stays (with a deletionTimestamp) until the
        garbage collector has removed its dependents, so "gone" means all gone. False
        when it was already absent."""
        body = {"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Foreground"}
        path = object_path(api_version, kind, namespace, name)
        return (
            await self._call("DELETE", path, body=body, content_type="application/json") is not None
        )

    async def pod_log(
        self,
        namespace: str,
        pod: str,
        container: str,
        *,
        previous: bool = True,
        tail_lines: int | None = None,
        limit_bytes: int | None = None,
    ) -> str:
        """The container's log as the kubelet keeps it (`pods/log`; `previous=true` is
        what `kubectl logs --previous` reads)."""
        path = object_path("v1", "Pod", namespace, pod) + "/log"
        params = {"container": container, "previous": "true" if previous else "false"}
        if tail_lines is not None:
            params["tailLines"] = str(tail_lines)
        if limit_bytes is not None:
            params["limitBytes"] = str(limit_bytes)
        try:
            headers = {**self._headers(), "Accept": "text/plain, */*"}
            async with self._session().get(path, params=params, headers=headers) as response:
                text = await response.text()
                if response.status >= 400:
                    raise ClusterError(
                        _reason("GET", path, response.status, text), status=response.status
                    )
                return text
        except (OSError, TimeoutError) as exc:
            raise ClusterError(f"GET {path}: {type(exc).__name__}", status=0) from exc

    async def served(self, api_version: str, kind: str) -> bool:
        """Whether the apiserver serves `kind` in `api_version` (discovery, which every
        authenticated user may read): a CRD that is not installed is not."""
        answer = await self._call("GET", f"/apis/{api_version}")
        return any(r.get("kind") == kind for r in (answer or {}).get("resources") or [])


def _reason(method: str, path: str, status: int, text: str) -> str:
    """The apiserver's own message (a Status object), never the request body: that may
    hold a Secret's data."""
    try:
        message = json.loads(text).get("message") or ""
    except (ValueError, AttributeError):
        message = ""
    return f"{method} {path}: {status} {message}".strip()[:500]
