"""Which control plane, with which credentials, a custom resource talks to.

The operator's own connection comes from its environment; a resource may name a Secret
(`spec.connectionRef`) with `url`, `apiKey` and optional `tenantId` instead. Both are a
`ConnectionSettings` (`deployplane.api.connection`), which builds the clients. Clients
are pooled per distinct connection so that 1,000 resources share one HTTP connection
pool; the key of that pool holds a digest of the API key, never the key itself.
"""

from __future__ import annotations

from collections.abc import Callable

from deployplane.api.client import ControlPlaneClient
from deployplane.api.connection import ConnectionSettings
from deployplane.crd.specs import LocalObjectReference
from deployplane.externals.kube import KubeReader
from deployplane.reconcile.external import DependencyNotReady

__all__ = ["ClientFactory", "Connection", "Connections"]

Connection = ConnectionSettings
"""The name the operator's modules know a connection by: the same class."""

ClientFactory = Callable[[ConnectionSettings], ControlPlaneClient]


class Connections:
    """Hands out a pooled ControlPlaneClient for a resource's connection."""

    def __init__(
        self,
        default: ConnectionSettings | None,
        kube: KubeReader,
        factory: ClientFactory = ConnectionSettings.client,
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

    async def _resolve(
        self, namespace: str, ref: LocalObjectReference | None
    ) -> ConnectionSettings:
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
        return ConnectionSettings(url, data.get("apiKey"), data.get("tenantId"))
