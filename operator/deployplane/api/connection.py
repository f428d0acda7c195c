"""`ConnectionSettings`: which control plane, with which credentials. The one way to
build a client.

The operator's default connection (its environment), a resource's `connectionRef`
Secret, the CLI's options and the listener agent all come down to the same three
values, so they build their clients here and nowhere else. The API key stays out of
`repr`/`str` (and so out of logs, events and tracebacks); pools are keyed by a digest of
it, never the key itself.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any, TypeVar, overload

from deployplane.api.client import ControlPlaneClient
from deployplane.api.env import ENV_API_KEY, ENV_TENANT_ID, ENV_URL

__all__ = ["ENV_API_KEY", "ENV_TENANT_ID", "ENV_URL", "ConnectionSettings"]

ClientT = TypeVar("ClientT", bound=ControlPlaneClient)


@dataclass(frozen=True)
class ConnectionSettings:
    """A control plane's base URL, API key (sent as X-Api-Key) and tenant (X-Tenant-Id)."""

    url: str
    api_key: str | None = field(default=None, repr=False)
    tenant_id: str | None = None

    def __repr__(self) -> str:  # never show the key, but say that one is hidden
        return (
            f"ConnectionSettings(url={self.url!r}, tenant_id={self.tenant_id!r}, "
            "api_key=<redacted>)"
        )

    __str__ = __repr__

    @property
    def pool_key(self) -> tuple[str, str, str]:
        """Tells connections apart for pooling clients, holding a digest of the key."""
        digest = hashlib.sha256((self.api_key or "").encode()).hexdigest()
        return (self.url, digest, self.tenant_id or "")

    @overload
    def client(self, **options: Any) -> ControlPlaneClient: ...

    @overload
    def client(self, client_class: type[ClientT], **options: Any) -> ClientT: ...

    def client(
        self, client_class: type[ControlPlaneClient] = ControlPlaneClient, **options: Any
    ) -> ControlPlaneClient:
        """A new client of `client_class` (a `ControlPlaneClient` subclass, e.g. the
        agent's) on this connection; `options` are the client's other keyword arguments
        (transport, retries, `on_response`)."""
        return client_class(self.url, api_key=self.api_key, tenant_id=self.tenant_id, **options)
