"""An in-memory stand-in for the Kubernetes side of the operator (Secrets, custom
resource statuses, status writes), for tests that run the reconcile loop without a
cluster. It records every status write so tests can prove "no writes at steady state"."""

from __future__ import annotations

import base64
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from deployplane.kube.finalizers import SecretRead
from deployplane.reconcile.eventrecorder import PendingEvent
from deployplane.reconcile.mergepatch import apply_merge_patch


@dataclass
class FakeKube:
    secrets: dict[tuple[str, str], dict[str, str]] = field(default_factory=dict)
    statuses: dict[tuple[str, str, str], dict[str, Any]] = field(default_factory=dict)
    writes: list[tuple[str, str, str, dict[str, Any]]] = field(default_factory=list)
    """Status patches."""
    objects: dict[tuple[str, str, str], dict[str, Any]] = field(default_factory=dict)
    """What object merge patches (metadata) made of each object: (namespace, plural, name)."""
    object_writes: list[tuple[str, str, str, dict[str, Any]]] = field(default_factory=list)
    finalizers_removed: list[tuple[str, str, str, str]] = field(default_factory=list)
    events: list[tuple[str, str, str]] = field(default_factory=list)
    """(object name, type, reason) of every Event posted."""
    fail_write_when: Any = None  # callable(patch) -> bool: simulate a crash on that write
    specs: dict[tuple[str, str, str], dict[str, Any]] = field(default_factory=dict)
    """Custom resources' specs, for `read_object` (their status is in `statuses`)."""
    namespace_labels: dict[str, dict[str, str]] = field(default_factory=dict)
    apiserver_away: str | None = None
    """Why the apiserver does not answer the readiness question (None: it answers)."""
    secret_finalizers: dict[tuple[str, str], list[str]] = field(default_factory=dict)
    """The finalizers on each Secret (`protect_secret`, `release_secret`)."""
    secrets_deleting: set[tuple[str, str]] = field(default_factory=set)
    """Secrets being deleted: they take no new finalizer."""
    secret_writes: list[tuple[str, str, str, str]] = field(default_factory=list)
    """("protect" | "release", namespace, name, finalizer) of every Secret write."""

    async def get_path(self, path: str) -> tuple[int, bytes]:
        """Only the apiserver's /readyz: a 500 naming `apiserver_away` when set."""
        assert path == "/readyz", path
        if self.apiserver_away is None:
            return 200, b"ok"
        return 500, self.apiserver_away.encode()

    def put_secret(self, namespace: str, name: str, data: Mapping[str, str]) -> None:
        # Round-trip through base64 as the real API does, to keep the fake honest.
        encoded = {k: base64.b64encode(v.encode()).decode() for k, v in data.items()}
        self.secrets[(namespace, name)] = {
            k: base64.b64decode(v).decode() for k, v in encoded.items()
        }

    async def read_secret(self, namespace: str, name: str) -> Mapping[str, str] | None:
        return self.secrets.get((namespace, name))

    async def read_secret_state(self, namespace: str, name: str) -> SecretRead | None:
        key = (namespace, name)
        if key not in self.secrets:
            return None
        finalizers = tuple(self.secret_finalizers.get(key, ()))
        return SecretRead(self.secrets[key], finalizers, key in self.secrets_deleting)

    async def protect_secret(self, namespace: str, name: str, finalizer: str) -> bool:
        key = (namespace, name)
        if key not in self.secrets or key in self.secrets_deleting:
            return False
        self.secret_writes.append(("protect", namespace, name, finalizer))
        kept = self.secret_finalizers.setdefault(key, [])
        if finalizer not in kept:
            kept.append(finalizer)
        return True

    async def release_secret(self, namespace: str, name: str, finalizer: str) -> bool:
        key = (namespace, name)
        if key not in self.secrets:
            return False
        self.secret_writes.append(("release", namespace, name, finalizer))
        kept = self.secret_finalizers.get(key, [])
        if finalizer in kept:
            kept.remove(finalizer)
        return True

    async def read_custom_status(
        self, namespace: str, plural: str, name: str
    ) -> Mapping[str, Any] | None:
        return self.statuses.get((namespace, plural, name))

    async def read_object(self, plural: str, namespace: str, name: str) -> dict[str, Any] | None:
        key = (namespace, plural, name)
        if key not in self.statuses and key not in self.specs:
            return None
        return {"spec": self.specs.get(key, {}), "status": self.statuses.get(key, {})}

    async def read_namespace_labels(self, name: str) -> Mapping[str, str] | None:
        return self.namespace_labels.get(name, {})

    async def patch_status(
        self, plural: str, namespace: str, name: str, patch: Mapping[str, Any]
    ) -> bool:
        if self.fail_write_when is not None and self.fail_write_when(patch):
            raise RuntimeError("simulated crash while writing status")
        self.writes.append((plural, namespace, name, dict(patch)))
        key = (namespace, plural, name)
        self.statuses[key] = apply_merge_patch(self.statuses.get(key, {}), patch)
        return True

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
        """Records the merge patch the API would send (the finalizer folded in). With
        `guard`, only if the object as the patches so far made it passes it: the fake
        holds the patches, not the body, so an object whose annotations no patch has
        touched is the body the pass read, which the writer tested."""
        key = (namespace, plural, name)
        patched = self.objects.get(key, {})
        touched = "annotations" in (patched.get("metadata") or {})
        if guard is not None and touched and not guard(patched):
            return False
        if add_finalizer is not None:
            meta = {**(patch.get("metadata") or {})}
            meta["finalizers"] = [*(finalizers or []), add_finalizer]
            patch = {**patch, "metadata": meta}
        if self.fail_write_when is not None and self.fail_write_when(patch):
            raise RuntimeError("simulated crash while writing the object")
        self.object_writes.append((plural, namespace, name, dict(patch)))
        self.objects[key] = apply_merge_patch(self.objects.get(key, {}), patch)
        return True

    async def remove_finalizer(
        self, plural: str, namespace: str, name: str, finalizer: str
    ) -> bool:
        self.finalizers_removed.append((plural, namespace, name, finalizer))
        return True

    async def post_event(self, pending: PendingEvent) -> None:
        name = (pending.involved.get("metadata") or {}).get("name", "")
        self.events.append((name, pending.event.type, pending.event.reason))
