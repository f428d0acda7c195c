"""Which control plane, with which credentials, a custom resource talks to.

A resource names a `ControlPlaneConnection` of its namespace in `spec.connectionRef`;
without one it uses the namespace's connection named `default`, else the operator's own
(its environment). A `connectionRef` may still name a Secret with `url`, `apiKey` and
optional `tenantId` (deprecated: `kind: Secret`, or a name no connection has). Each comes
down to a `ConnectionSettings` (`deployplane.api.connection`), which builds the clients.

The connections themselves are read from Kopf's in-memory index of the kind
(`kopf.index`, complete before any handler runs), not fetched: every pass of every
resource resolves its connection, and the namespace default must be looked up even when
there is none. The API key Secret a connection names is read at most once a minute
(`KEY_TTL`), and afresh whenever the connection itself is checked, or another instance
of a sharded install is seen to have checked it and found it Ready (`forget_key`). Each
read protects the Secret from deletion while a connection names it
(`externals.keyprotection`); `release_keys` lets go of it.

Clients are pooled per distinct connection so that 1,000 resources share one HTTP
connection pool; the key of that pool holds a digest of the API key, never the key.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Final

from deployplane.api.client import ControlPlaneClient
from deployplane.api.connection import ConnectionSettings
from deployplane.externals.keyprotection import KeyProtection
from deployplane.externals.kube import KubeReader, SecretKeeper
from deployplane.kinds.common import DEFAULT_CONNECTION, ConnectionKind, ConnectionReference
from deployplane.kinds.controlplaneconnection.spec import ControlPlaneConnectionSpec
from deployplane.reconcile.external import DependencyNotReady

__all__ = [
    "DEFAULT_CONNECTION",
    "ClientFactory",
    "Connection",
    "ConnectionIndex",
    "Connections",
]

log = logging.getLogger("deployplane.connections")

Connection = ConnectionSettings
"""The name the operator's modules know a connection by: the same class."""

ClientFactory = Callable[[ConnectionSettings], ControlPlaneClient]

ConnectionIndex = Mapping[tuple[str, str], Iterable[ControlPlaneConnectionSpec]]
"""(namespace, name) -> the ControlPlaneConnection's spec: the shape of a `kopf.Index`
(a key maps to a store of values; one object per name, so one value)."""

KEY_TTL: Final = 60.0
"""Seconds an API key read from a connection's Secret is used before it is read again."""


class Connections:
    """Hands out a pooled ControlPlaneClient for a resource's connection."""

    def __init__(
        self,
        default: ConnectionSettings | None,
        kube: KubeReader,
        factory: ClientFactory = ConnectionSettings.client,
        *,
        index: ConnectionIndex | None = None,
        clock: Callable[[], float] = time.monotonic,
        keeper: SecretKeeper | None = None,
    ) -> None:
        """`keeper`: what protects the API key Secrets as they are read (the operator's
        Kubernetes client); None reads them only (`deployplane plan`, which writes
        nothing)."""
        self._default = default
        self._kube = kube
        self._factory = factory
        self._index: ConnectionIndex = index if index is not None else {}
        self._clock = clock
        self._clients: dict[tuple[str, str, str], ControlPlaneClient] = {}
        self._keys: dict[tuple[str, str], tuple[float, Mapping[str, str]]] = {}
        self._warned: set[tuple[str, str]] = set()
        self._protection = None if keeper is None else KeyProtection(keeper, self.naming)

    async def client_for(
        self, namespace: str, ref: ConnectionReference | None
    ) -> ControlPlaneClient:
        return self.client(await self.settings_for(namespace, ref))

    def client(self, conn: ConnectionSettings) -> ControlPlaneClient:
        """The pooled client of `conn` (made at its first use)."""
        client = self._clients.get(conn.pool_key)
        if client is None:
            client = self._clients[conn.pool_key] = self._factory(conn)
        return client

    async def aclose(self) -> None:
        for client in self._clients.values():
            await client.aclose()
        self._clients.clear()

    async def settings_for(
        self, namespace: str, ref: ConnectionReference | None
    ) -> ConnectionSettings:
        """The connection a resource of `namespace` with this `connectionRef` uses."""
        if ref is None:
            spec = self.lookup(namespace, DEFAULT_CONNECTION)
            if spec is not None:
                return await self.settings_of(namespace, DEFAULT_CONNECTION, spec)
            if self._default is None:
                raise DependencyNotReady(
                    "no control-plane connection: set spec.connectionRef, create the "
                    f"ControlPlaneConnection {DEFAULT_CONNECTION!r} in namespace {namespace}, "
                    "or set the operator's DEPLOYPLANE_CONTROL_PLANE_URL"
                )
            return self._default
        if ref.kind is not ConnectionKind.SECRET:
            spec = self.lookup(namespace, ref.name)
            if spec is not None:
                return await self.settings_of(namespace, ref.name, spec)
            if ref.kind is ConnectionKind.CONTROL_PLANE_CONNECTION:
                raise DependencyNotReady(f"ControlPlaneConnection {ref.name} not found")
        return await self._from_secret(namespace, ref)

    def forget_key(self, namespace: str, name: str) -> None:
        """The connection `name` was checked by another instance (a label shard's) and
        turned Ready: the API key this one read within `KEY_TTL` may be the refused one,
        so its Secret is read again at the next use."""
        spec = self.lookup(namespace, name)
        if spec is not None and spec.api_key_secret_ref is not None:
            self._keys.pop((namespace, spec.api_key_secret_ref.name), None)

    def lookup(self, namespace: str, name: str) -> ControlPlaneConnectionSpec | None:
        """The spec of the ControlPlaneConnection `name` of `namespace`, if there is one."""
        key = (namespace, name)
        if key not in self._index:
            return None
        return next(iter(self._index[key]), None)

    def naming(self, namespace: str, secret: str) -> list[str]:
        """The ControlPlaneConnections of `namespace` whose API key is in Secret `secret`."""
        return [
            name
            for (ns, name), specs in self._index.items()
            if ns == namespace
            for spec in specs
            if spec.api_key_secret_ref is not None and spec.api_key_secret_ref.name == secret
        ]

    async def release_keys(self, namespace: str, name: str, secrets: Iterable[str]) -> list[str]:
        """Connection `name` no longer needs these API key Secrets (finalized, or its
        spec names another): each one no other connection names loses its protection.
        The names released."""
        if self._protection is None:
            return []
        released = await self._protection.release(namespace, secrets, by=name)
        for secret in released:
            self._keys.pop((namespace, secret), None)
        return released

    async def settings_of(
        self, namespace: str, name: str, spec: ControlPlaneConnectionSpec, *, fresh: bool = False
    ) -> ConnectionSettings:
        """The settings a ControlPlaneConnection's spec gives; `fresh` reads its API key
        Secret now rather than within `KEY_TTL`."""
        ref = spec.api_key_secret_ref
        if ref is None:
            return ConnectionSettings(spec.url, None, spec.tenant_id)
        data = await self._key_secret(namespace, ref.name, fresh)
        if data is None:
            raise DependencyNotReady(
                f"API key Secret {ref.name} of ControlPlaneConnection {name} not found"
            )
        api_key = data.get(ref.key)
        if not api_key:
            raise DependencyNotReady(
                f"API key Secret {ref.name} of ControlPlaneConnection {name} has no key {ref.key}"
            )
        return ConnectionSettings(spec.url, api_key, spec.tenant_id)

    async def _key_secret(self, namespace: str, name: str, fresh: bool) -> Mapping[str, str] | None:
        now = self._clock()
        cached = self._keys.get((namespace, name))
        if cached is not None and not fresh and now - cached[0] < KEY_TTL:
            return cached[1]
        if self._protection is None:
            data = await self._kube.read_secret(namespace, name)
        else:
            data = await self._protection.read(namespace, name)
        if data is None:
            self._keys.pop((namespace, name), None)
        else:
            self._keys[(namespace, name)] = (now, data)
        return data

    async def _from_secret(self, namespace: str, ref: ConnectionReference) -> ConnectionSettings:
        data = await self._kube.read_secret(namespace, ref.name)
        if data is None:
            if ref.kind is ConnectionKind.SECRET:
                raise DependencyNotReady(f"connection Secret {ref.name} not found")
            raise DependencyNotReady(f"no ControlPlaneConnection or Secret named {ref.name}")
        url = data.get("url")
        if not url:
            raise DependencyNotReady(f"connection Secret {ref.name} has no key url")
        if (namespace, ref.name) not in self._warned:
            self._warned.add((namespace, ref.name))
            log.warning(
                "%s: connectionRef %s names a Secret: deprecated, use a ControlPlaneConnection",
                namespace,
                ref.name,
            )
        return ConnectionSettings(url, data.get("apiKey"), data.get("tenantId"))
