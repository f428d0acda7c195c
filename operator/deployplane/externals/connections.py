"""Which control plane, with which credentials, a custom resource talks to.

The operator's own connection comes from its environment; a resource may name a Secret
(`spec.connectionRef`) with `url`, `apiKey` and optional `tenantId` instead. Clients are
pooled per distinct connection so that 1,000 resources share one HTTP connection pool.
The key of that pool holds a digest of the API key, never the key itself.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass

from deployplane.api.client import ControlPlaneClient
from deployplane.crd.specs import LocalObjectReference
from deployplane.externals.kube import KubeReader
from deployplane.reconcile.external import DependencyNotReady


@dataclass(frozen=True)
class Connection:
    url: str
    api_key: str | None = None
    tenant_id: str | None = None

    def __repr__(self) -> str:
        return f"Connection(url={self.url!r}, tenant_id={self.tenant_id!r}, api_key=<redacted>)"

    @property
    def pool_key(self) -> tuple[str, str, str]:
        digest = hashlib.sha256((self.api_key or "").encode()).hexdigest()
        return (self.url, digest, self.tenant_id or "")


ClientFactory = Callable[[Connection], ControlPlaneClient]


def default_client_factory(conn: Connection) -> ControlPlaneClient:
    return ControlPlaneClient(conn.url, api_key=conn.api_key, tenant_id=conn.tenant_id)


class Connections:
    """Hands out a pooled ControlPlaneClient for a resource's connection."""

    def __init__(
        self,
        default: Connection | None,
        kube: KubeReader,
        factory: ClientFactory = default_client_factory,
    ) -> None:
        self._default = default
        self._kube = kube
        self._factory = factory
        self._clients: dict[tuple[str, str, str], ControlPlaneClient] = {}

    async def client_for(
        self, namespace: str, ref: LocalObjectReference | None
    ) -> ControlPlaneClient:
        conn = await self._resolve(namespace, ref)
        client = self._clients.get(conn.pool_key)
        if client is None:
            client = self._clients[conn.pool_key] = self._factory(conn)
        return client

    async def aclose(self) -> None:
        for client in self._clients.values():
            await client.aclose()
        self._clients.clear()

    async def _resolve(self, namespace: str, ref: LocalObjectReference | None) -> Connection:
        if ref is None:
            if self._default is None:
                raise DependencyNotReady(
                    "no control-plane connection: set spec.connectionRef or the operator's "
                    "DEPLOYPLANE_CONTROL_PLANE_URL"
                )
            return self._default
        data = await self._kube.read_secret(namespace, ref.name)
        if data is None:
            raise DependencyNotReady(f"connection Secret {ref.name} not found")
        url = data.get("url")
        if not url:
            raise DependencyNotReady(f"connection Secret {ref.name} has no key url")
        return Connection(url=url, api_key=data.get("apiKey"), tenant_id=data.get("tenantId"))
