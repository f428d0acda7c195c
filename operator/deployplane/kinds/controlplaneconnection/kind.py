"""The ControlPlaneConnection kind: a control plane (URL, API key, tenant) that the
other kinds name in `spec.connectionRef`, or use as their namespace's `default`.

Crossplane's ProviderConfig, ACK's CARM: credentials kept once per namespace, not in
every resource. Its Ready condition says whether the control plane accepted the key at
the last check (`externals.controlplaneconnection`). Kopf keeps an index of every
connection's spec (`indexed`), which is where the other kinds' passes read it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from deployplane.crd.cel import Rule, Rules
from deployplane.crd.columns import column, printer_columns
from deployplane.kinds.common import DEFAULT_CONNECTION
from deployplane.kinds.controlplaneconnection.spec import ControlPlaneConnectionSpec
from deployplane.kinds.controlplaneconnection.status import ControlPlaneConnectionStatus
from deployplane.kinds.registry import KindDef

RULES: Final[Rules] = {
    "url": [
        Rule(
            r"self.matches('^https?://[^\\s/?#]+[^\\s]*$')",
            "spec.url must be an http:// or https:// URL, e.g. https://api.example.com",
        )
    ],
}


def uses(connection: Mapping[str, Any], body: Mapping[str, Any]) -> bool:
    """Whether a resource (its body) goes through the connection (its body): one of
    the same namespace whose `connectionRef` names it (not as a Secret), or that names
    none while this is the namespace's `default` (as `externals.connections` resolves
    them)."""
    meta = connection.get("metadata") or {}
    if (body.get("metadata") or {}).get("namespace") != meta.get("namespace"):
        return False
    name = meta.get("name")
    ref = (body.get("spec") or {}).get("connectionRef")
    if not ref:
        return name == DEFAULT_CONNECTION
    return bool(ref.get("name") == name and ref.get("kind") != "Secret")


KIND: Final = KindDef(
    kind="ControlPlaneConnection",
    plural="controlplaneconnections",
    short_names=("dpconn", "cpconn"),
    description=(
        "A control plane and the API key to use it with, for the AgentDeployments and "
        "Listeners of this namespace that name it in spec.connectionRef (or, named "
        "`default`, for those that name none). Ready: the control plane accepted the key."
    ),
    spec_model=ControlPlaneConnectionSpec,
    status_model=ControlPlaneConnectionStatus,
    noun="connection",
    rules=RULES,
    printer_columns=printer_columns(
        column("URL", ".spec.url", "Base URL of the control plane."),
        column("Tenant", ".spec.tenantId", "Workspace (tenant) id.", priority=1),
        column("Key Secret", ".spec.apiKeySecretRef.name", "Secret of the API key.", priority=1),
    ),
    indexed=True,
    used_by=uses,
)
