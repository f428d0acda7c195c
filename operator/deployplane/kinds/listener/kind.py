"""The Listener kind: compute infrastructure that runs self-hosted deployments.

AgentDeployments run on it (`spec.sourceConfig.listenerRef`, or its id in
`spec.sourceConfig.listenerId`): while one does, a Listener being deleted waits (`uses`,
`reconcile.usage`), since the control plane removes a deployment only once the
listener's data plane has removed its workloads.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from deployplane.crd.cel import REQUIRED, Rule, Rules, fixed_once_created
from deployplane.crd.columns import column, connection_column, policy_column, printer_columns
from deployplane.kinds.listener.spec import ListenerSpec
from deployplane.kinds.listener.status import ListenerStatus
from deployplane.kinds.registry import KindDef

OBJECT_RULES: Final = (
    # Correctable in git while no listener exists for it on the control plane.
    *(
        fixed_once_created(field, "listenerId", "listener", "Listener")
        for field in ("computeType", "computeId")
    ),
    fixed_once_created("listenerId", "listenerId", "listener", "Listener", presence="once set"),
)

RULES: Final[Rules] = {
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


def uses(listener: Mapping[str, Any], body: Mapping[str, Any]) -> bool:
    """Whether a resource (its body) runs on the Listener (its body): its
    `sourceConfig.listenerRef` names it (in the Listener's namespace, its own by
    default), or, in the Listener's namespace, its `listenerId` is the Listener's id."""
    meta = listener.get("metadata") or {}
    user_namespace = (body.get("metadata") or {}).get("namespace")
    source = (body.get("spec") or {}).get("sourceConfig") or {}
    ref = source.get("listenerRef")
    if ref:
        namespace = ref.get("namespace") or user_namespace
        return bool(ref.get("name") == meta.get("name") and namespace == meta.get("namespace"))
    listener_id = (listener.get("status") or {}).get("listenerId")
    same = user_namespace == meta.get("namespace")
    return bool(same and listener_id and source.get("listenerId") == listener_id)


def shared(listener: Mapping[str, Any]) -> bool:
    """Whether AgentDeployments of other namespaces may run on it (its
    `allowedNamespaces` admits any other)."""
    allowed = (listener.get("spec") or {}).get("allowedNamespaces") or {}
    return bool(allowed.get("from", "Same") != "Same")


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
    rules=RULES,
    object_rules=OBJECT_RULES,
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
    used_by=uses,
    shared_by=shared,
)
