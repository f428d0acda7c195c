"""Which control plane a traced resource uses, as far as the CLI can tell with reads
only: its `connectionRef` resolved as the operator does (`externals.connections`), with
none its namespace's `default` ControlPlaneConnection, else the CLI's own connection."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeVar

from deployplane.api.client import ControlPlaneClient
from deployplane.api.connection import ConnectionSettings
from deployplane.cli.commands import connection
from deployplane.cli.commands.trace.readers import KubeAccess, KubeError
from deployplane.cli.commands.trace.tree import Missing
from deployplane.kinds import KINDS
from deployplane.kinds.common import DEFAULT_CONNECTION

__all__ = ["control_plane", "settings_for"]

T = TypeVar("T")

CONNECTIONS = KINDS["ControlPlaneConnection"].plural


def settings_for(
    kube: KubeAccess, namespace: str, obj: Mapping[str, Any]
) -> ConnectionSettings | Missing:
    """The control plane the operator uses for this resource, as far as the CLI knows:
    `connectionRef` resolved as the operator does (`externals.connections`), and with
    none the namespace's `default` connection, else the CLI's own connection."""
    ref = (obj.get("spec") or {}).get("connectionRef") or {}
    name, kind = ref.get("name"), ref.get("kind")
    try:
        if kind != "Secret":
            found = kube.custom_resource(CONNECTIONS, namespace, name or DEFAULT_CONNECTION)
            if found is not None:
                return _connection_settings(kube, namespace, found)
            if kind == "ControlPlaneConnection":
                return Missing("ConnectionNotFound", f"ControlPlaneConnection {name} not found")
        data = kube.secret_data(namespace, name) if name else None
    except KubeError as exc:
        return Missing("ConnectionUnreadable", str(exc))
    if name:
        if data is None:
            what = "connection Secret" if kind == "Secret" else "ControlPlaneConnection or Secret"
            return Missing("ConnectionNotFound", f"no {what} named {name}")
        if not data.get("url"):
            return Missing("ConnectionInvalid", f"connection Secret {name} has no key url")
        return ConnectionSettings(data["url"], data.get("apiKey"), data.get("tenantId"))
    if not connection.has_url():  # the tree still shows the Kubernetes side
        return Missing("NoConnection", "no control-plane URL: pass --url or use a context")
    return connection.current_settings()  # exits 2 on a bad context or no key


def _connection_settings(
    kube: KubeAccess, namespace: str, found: Mapping[str, Any]
) -> ConnectionSettings | Missing:
    """A ControlPlaneConnection's URL, tenant and the API key its Secret holds."""
    name = (found.get("metadata") or {}).get("name")
    spec = found.get("spec") or {}
    key_ref = spec.get("apiKeySecretRef") or {}
    api_key = None
    if key_ref:
        data = kube.secret_data(namespace, key_ref.get("name", ""))
        api_key = (data or {}).get(key_ref.get("key", ""))
        if not api_key:
            return Missing(
                "ConnectionInvalid",
                f"ControlPlaneConnection {name}: no key {key_ref.get('key')} in Secret "
                f"{key_ref.get('name')}",
            )
    return ConnectionSettings(spec.get("url", ""), api_key, spec.get("tenantId"))


def control_plane(
    settings: ConnectionSettings, action: Callable[[ControlPlaneClient], Awaitable[T]]
) -> T:
    async def main() -> T:
        async with connection.make_client(settings) as client:
            return await action(client)

    return asyncio.run(main())
