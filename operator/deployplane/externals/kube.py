"""What the external clients need from Kubernetes, as a protocol (faked in unit tests)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol


class KubeReader(Protocol):
    """Reads objects in the custom resource's namespace."""

    async def read_secret(self, namespace: str, name: str) -> Mapping[str, str] | None:
        """The Secret's decoded data, or None if there is no such Secret."""
        ...

    async def read_custom_status(
        self, namespace: str, plural: str, name: str
    ) -> Mapping[str, Any] | None:
        """A custom resource's status (empty when it has none), or None if it is absent."""
        ...
