"""The operator's finalizer writes: its own finalizer on the custom resources (added with
the create marker, taken off after finalization) and the in-use protection of the
Secrets its resources cannot be finalized without (`SecretRead`, `protect_secret`,
`release_secret`). A mixin of `deployplane.kube.api.KubernetesApi`, which sends.

Every removal is a JSON patch guarded by a `test` of the finalizer list as just read,
so a finalizer another controller adds meanwhile is never lost; every addition either
keeps the list read at a resourceVersion (a merge patch under that precondition) or is
a strategic merge patch, which merges the list (a Secret is a core object: its
`metadata.finalizers` merges, where a custom resource's merge patch replaces it).
"""

from __future__ import annotations

import base64
import json
import logging
from collections.abc import Callable, Container, Mapping
from dataclasses import dataclass
from typing import Any, Final

from kubernetes.client.exceptions import ApiException

from deployplane.kube.paths import object_path as _path

log = logging.getLogger("deployplane.kube")

CONFLICT_RETRIES: Final = 5

_REFUSED: set[str] = set()
"""The Secrets whose protection this process was refused (403), each told once."""


@dataclass(frozen=True)
class SecretRead:
    """A Secret as the operator reads it: its decoded data, and whether it is protected
    and being deleted (never its values in any text)."""

    data: Mapping[str, str]
    finalizers: tuple[str, ...] = ()
    deleting: bool = False


def secret_path(namespace: str, name: str) -> str:
    return f"/api/v1/namespaces/{namespace}/secrets/{name}"


def _label_key(label: str) -> str:
    """A label key as a JSON pointer token ('/' is '~1')."""
    return label.replace("~", "~0").replace("/", "~1")


class FinalizerRequests:
    """The finalizer requests of `KubernetesApi` (which provides `_send`)."""

    async def _send(
        self,
        method: str,
        path: str,
        *,
        body: Any = None,
        content_type: str | None = None,
        params: Mapping[str, str] | None = None,
        allowed: Container[int] = (),
    ) -> tuple[int, bytes]:
        raise NotImplementedError  # KubernetesApi's

    async def _read(self, path: str) -> dict[str, Any] | None:
        status, payload = await self._send("GET", path, allowed=(404,))
        if status == 404:
            return None
        obj: dict[str, Any] = json.loads(payload)
        return obj

    async def patch_object(
        self,
        plural: str,
        namespace: str,
        name: str,
        patch: Mapping[str, Any],
        *,
        add_finalizer: str | None = None,
        finalizers: list[str] | None = None,
        resource_version: str | None = None,
        guard: Callable[[Mapping[str, Any]], bool] | None = None,
    ) -> bool:
        """JSON-merge-patch the object itself (annotations); with `add_finalizer`, add
        that finalizer to the list the object had at `resource_version` (`finalizers`),
        under that resourceVersion as a precondition: a merge patch replaces the whole
        list, so if the object changed meanwhile (another controller added its own
        finalizer) the apiserver answers 409 and the object is read again, never
        dropping the other's. With `guard` (a test of the object), the patch changes
        only an object that passes it: it is sent under `resource_version` (the version
        the caller tested), or without one under the version read first, and after a
        409 only if the object read again still passes. False if gone, or if the object
        fails `guard`."""
        path = _path(plural, namespace, name)
        current = list(finalizers or [])
        if guard is not None and not resource_version:
            fresh = await self._read(path)
            if fresh is None or not guard(fresh):
                return False
            current, resource_version = _finalizers_and_version(fresh)
        for _ in range(CONFLICT_RETRIES):
            meta = dict(patch.get("metadata") or {})
            adding = add_finalizer is not None and add_finalizer not in current
            if adding:
                meta["finalizers"] = [*current, add_finalizer]
            if (adding or guard is not None) and resource_version:
                meta["resourceVersion"] = resource_version
            status, _ = await self._send(
                "PATCH",
                path,
                body={**patch, "metadata": meta},
                content_type="application/merge-patch+json",
                allowed=(404, 409),
            )
            if status == 404:
                return False
            if status != 409:
                return True
            fresh = await self._read(path)
            if fresh is None or (guard is not None and not guard(fresh)):
                return False
            current, resource_version = _finalizers_and_version(fresh)
        raise ApiException(status=409, reason=f"{namespace}/{name} keeps changing")

    async def remove_finalizer(
        self, plural: str, namespace: str, name: str, finalizer: str
    ) -> bool:
        """Take `finalizer` off the object, leaving any other's. False if gone."""
        return await self._remove_finalizer(_path(plural, namespace, name), finalizer)

    async def read_secret_state(self, namespace: str, name: str) -> SecretRead | None:
        """The Secret's decoded data and protection, or None if there is none."""
        obj = await self._read(secret_path(namespace, name))
        if obj is None:
            return None
        meta = obj.get("metadata") or {}
        data = {k: base64.b64decode(v).decode() for k, v in (obj.get("data") or {}).items()}
        finalizers = tuple(meta.get("finalizers") or ())
        return SecretRead(data, finalizers, bool(meta.get("deletionTimestamp")))

    async def protect_secret(self, namespace: str, name: str, finalizer: str) -> bool:
        """Put `finalizer` and the label of the same name on the Secret (a strategic
        merge patch: the finalizers of others stay). False if there is no such Secret,
        or it is being deleted already (no finalizer may be added then)."""
        body = {"metadata": {"finalizers": [finalizer], "labels": {finalizer: "true"}}}
        path = secret_path(namespace, name)
        status, _ = await self._send(
            "PATCH",
            path,
            body=body,
            content_type="application/strategic-merge-patch+json",
            allowed=(403, 404, 422),
        )
        if status == 403:
            _refused(path)
        return status < 400

    async def release_secret(self, namespace: str, name: str, finalizer: str) -> bool:
        """Take `finalizer` and its label off the Secret, leaving any other's. False if
        there is no such Secret."""
        path = secret_path(namespace, name)
        return await self._remove_finalizer(path, finalizer, finalizer, refusable=True)

    async def _remove_finalizer(
        self, path: str, finalizer: str, label: str | None = None, *, refusable: bool = False
    ) -> bool:
        """A JSON patch guarded by a test of the list as just read, so a finalizer
        somebody adds meanwhile is never lost: on a refusal (the list changed) read
        again and retry. With `label`, that label goes in the same patch. False if
        gone, or (`refusable`) if the role may not patch it."""
        for _ in range(CONFLICT_RETRIES):
            obj = await self._read(path)
            if obj is None:
                return False
            meta = obj.get("metadata") or {}
            current = list(meta.get("finalizers") or [])
            labelled = label is not None and label in (meta.get("labels") or {})
            if finalizer not in current and not labelled:
                return True
            ops: list[dict[str, Any]] = []
            if finalizer in current:
                ops.append({"op": "test", "path": "/metadata/finalizers", "value": current})
                kept = [f for f in current if f != finalizer]
                ops.append({"op": "replace", "path": "/metadata/finalizers", "value": kept})
            if labelled and label is not None:
                ops.append({"op": "remove", "path": f"/metadata/labels/{_label_key(label)}"})
            status, _ = await self._send(
                "PATCH",
                path,
                body=ops,
                content_type="application/json-patch+json",
                allowed=(403, 404, 409, 422) if refusable else (404, 409, 422),
            )
            if status == 403:
                _refused(path)
                return False
            if status == 404:
                return False
            if status < 400:
                return True
        raise ApiException(status=409, reason=f"finalizers of {path} keep changing")


def _finalizers_and_version(obj: Mapping[str, Any]) -> tuple[list[str], str | None]:
    meta = obj.get("metadata") or {}
    return list(meta.get("finalizers") or []), meta.get("resourceVersion")


def _refused(path: str) -> None:
    """A role without `patch` on the object (an install whose RBAC predates the
    protection): told once per object, and the operator goes on without it."""
    if path not in _REFUSED:
        _REFUSED.add(path)
        log.warning(
            "PATCH %s: 403 Forbidden: the operator's role may not patch it, so it is not "
            "protected from deletion while it is needed (grant patch on secrets)",
            path,
        )
