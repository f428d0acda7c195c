"""What the external clients need from Kubernetes, as a protocol (faked in unit tests)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from deployplane.kube.finalizers import SecretRead


class KubeReader(Protocol):
    """Reads what the custom resources refer to (Secrets, Listeners, namespaces)."""

    async def read_secret(self, namespace: str, name: str) -> Mapping[str, str] | None:
        """The Secret's decoded data, or None if there is no such Secret."""
        ...

    async def read_custom_status(
        self, namespace: str, plural: str, name: str
    ) -> Mapping[str, Any] | None:
        """A custom resource's status (empty when it has none), or None if it is absent."""
        ...

    async def read_object(self, plural: str, namespace: str, name: str) -> dict[str, Any] | None:
        """A custom resource, or None if it is absent."""
        ...

    async def read_namespace_labels(self, name: str) -> Mapping[str, str] | None:
        """A namespace's labels, or None if there is no such namespace."""
        ...


class SecretKeeper(Protocol):
    """Reads a Secret with its protection, and puts it on or takes it off
    (`deployplane.kube.finalizers`; `deployplane.externals.keyprotection` uses it)."""

    async def read_secret_state(self, namespace: str, name: str) -> SecretRead | None:
        """The Secret's decoded data, finalizers and whether it is being deleted; None
        if there is no such Secret."""
        ...

    async def protect_secret(self, namespace: str, name: str, finalizer: str) -> bool:
        """Add `finalizer` (and its label); False if absent or being deleted already."""
        ...

    async def release_secret(self, namespace: str, name: str, finalizer: str) -> bool:
        """Take `finalizer` (and its label) off, leaving others'; False if absent."""
        ...
