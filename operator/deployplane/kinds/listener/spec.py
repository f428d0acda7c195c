"""The Listener's spec: the API's listener body in camelCase, plus which namespaces'
AgentDeployments may run on it (Gateway API's allowedRoutes.namespaces).
"""

from __future__ import annotations

from enum import StrEnum
from uuid import UUID

from pydantic import Field

from deployplane.api.models import ApiModel, ComputeConfig, ComputeType
from deployplane.kinds.common import ConnectionSpec


class NamespacesFrom(StrEnum):
    """Which namespaces' AgentDeployments may use a Listener (Gateway API's `from`)."""

    SAME = "Same"
    ALL = "All"
    SELECTOR = "Selector"


class SelectorOperator(StrEnum):
    IN = "In"
    NOT_IN = "NotIn"
    EXISTS = "Exists"
    DOES_NOT_EXIST = "DoesNotExist"


class LabelSelectorRequirement(ApiModel):
    """A metav1.LabelSelectorRequirement."""

    key: str = Field(min_length=1, max_length=317, description="The label key.")
    operator: SelectorOperator = Field(description="In, NotIn, Exists or DoesNotExist.")
    values: list[str] | None = Field(
        None, description="Non-empty for In and NotIn, empty for Exists and DoesNotExist."
    )


class LabelSelector(ApiModel):
    """A metav1.LabelSelector: every matchLabels pair and every expression must match."""

    match_labels: dict[str, str] | None = Field(None, description="Labels that must be equal.")
    match_expressions: list[LabelSelectorRequirement] | None = Field(
        None, description="Requirements on labels."
    )


class AllowedNamespaces(ApiModel):
    """Which namespaces may refer to this Listener (Gateway API's allowedRoutes.namespaces)."""

    from_: NamespacesFrom = Field(
        NamespacesFrom.SAME,
        alias="from",
        description=(
            "Same: only this namespace (the default); All: every namespace; Selector: "
            "namespaces whose labels match selector."
        ),
    )
    selector: LabelSelector | None = Field(
        None, description="Namespaces whose labels match it (only with from: Selector)."
    )


class ListenerSpec(ConnectionSpec):
    """Desired state of a listener (compute infrastructure) on the control plane."""

    compute_type: ComputeType = Field(
        description="Kind of compute. Fixed once the listener exists (status.listenerId)."
    )
    compute_id: str = Field(
        min_length=1,
        max_length=253,
        description=(
            "Unique id of the compute, e.g. the cluster name. Fixed once the listener "
            "exists (status.listenerId)."
        ),
    )
    compute_config: ComputeConfig | None = Field(None, description="Compute settings.")
    version: str | None = Field(None, max_length=253, description="Listener version.")
    listener_id: UUID | None = Field(
        None, description="Adopt this existing listener instead of creating one."
    )
    allowed_namespaces: AllowedNamespaces | None = Field(
        None,
        description=(
            "Which namespaces' AgentDeployments may name this Listener in their "
            "listenerRef; default: this namespace only."
        ),
    )
