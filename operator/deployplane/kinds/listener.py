"""The Listener kind: compute infrastructure that runs self-hosted deployments."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from deployplane.crd.cel import REQUIRED, Rule, Rules, immutable
from deployplane.crd.columns import column, connection_column, policy_column, printer_columns
from deployplane.crd.specs import ListenerSpec
from deployplane.crd.status import ListenerStatus
from deployplane.kinds.registry import KindDef
from deployplane.reconcile.external import Connecter

if TYPE_CHECKING:
    from deployplane.externals.connections import Connections
    from deployplane.externals.kube import KubeReader

RULES: Final[Rules] = {
    "": [
        Rule(
            "!has(oldSelf.listenerId) || has(self.listenerId)",
            "spec.listenerId cannot be removed once set",
            field_path=".listenerId",
        ),
    ],
    "computeType": [immutable("computeType")],
    "computeId": [immutable("computeId")],
    "listenerId": [Rule("self == oldSelf", "spec.listenerId is immutable once set")],
    "allowedNamespaces": [
        Rule(
            "!has(self.from) || self.from != 'Selector' || has(self.selector)",
            "spec.allowedNamespaces.selector is required when from is Selector",
            field_path=".selector",
            reason=REQUIRED,
        ),
        Rule(
            "(has(self.from) && self.from == 'Selector') || !has(self.selector)",
            "spec.allowedNamespaces.selector is only allowed when from is Selector",
            field_path=".selector",
        ),
    ],
}


def connecter(
    connections: Connections, kube: KubeReader
) -> Connecter[ListenerSpec, ListenerStatus, Any, Any]:
    # Imported when the operator starts, not with the kind (see agentdeployment.py).
    from deployplane.externals.listener import ListenerConnecter

    return ListenerConnecter(connections)


KIND: Final = KindDef(
    kind="Listener",
    plural="listeners",
    # not `ls`/`lis`/`listener`: short and unlikely to clash with other operators' kinds
    short_names=("dpl", "dplistener"),
    description=(
        "A listener (compute infrastructure that runs self-hosted deployments) on the "
        "control plane, kept in sync with this spec."
    ),
    spec_model=ListenerSpec,
    status_model=ListenerStatus,
    noun="listener",
    connecter=connecter,
    rules=RULES,
    printer_columns=printer_columns(
        column("Listener ID", ".status.listenerId", "Listener id on the control plane."),
        column("Compute ID", ".spec.computeId", "Unique id of the compute.", priority=1),
        column(
            "Shared With",
            ".spec.allowedNamespaces.from",
            "Which other namespaces may use it (empty: Same).",
            priority=1,
        ),
        connection_column(),
        policy_column(),
    ),
)
