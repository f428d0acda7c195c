"""What the specs of the kinds share (Crossplane's ResourceSpec): the management and
deletion policies, the connection a resource names, and references to objects of its
own namespace. Each kind's own spec is in its folder (`kinds/<kind>/spec.py`).
"""

from __future__ import annotations

from enum import StrEnum
from typing import Final

from pydantic import Field

from deployplane.api.models import ApiModel


class DeletionPolicy(StrEnum):
    """What happens on the control plane when the custom resource is deleted."""

    DELETE = "Delete"
    ORPHAN = "Orphan"


class LocalObjectReference(ApiModel):
    """A reference to an object in the custom resource's own namespace."""

    name: str = Field(min_length=1, max_length=253, description="Name of the object.")


class SecretKeySelector(ApiModel):
    """A key of a Secret in the custom resource's namespace."""

    name: str = Field(min_length=1, max_length=253, description="Name of the Secret.")
    key: str = Field(min_length=1, max_length=253, description="Key within the Secret.")


class ManagementPolicy(StrEnum):
    """How much of the external resource the operator manages (Crossplane's
    managementPolicies, in two words)."""

    FULL = "Full"
    OBSERVE_ONLY = "ObserveOnly"


DEFAULT_CONNECTION: Final = "default"
"""The ControlPlaneConnection a resource without `connectionRef` uses in its namespace."""


class ConnectionKind(StrEnum):
    """What a `connectionRef` names."""

    CONTROL_PLANE_CONNECTION = "ControlPlaneConnection"
    SECRET = "Secret"


class ConnectionReference(ApiModel):
    """A ControlPlaneConnection (or, deprecated, a Secret) in the resource's namespace."""

    name: str = Field(min_length=1, max_length=253, description="Name of the object.")
    kind: ConnectionKind | None = Field(
        None,
        description=(
            "ControlPlaneConnection, or Secret (deprecated: keys `url`, `apiKey` and "
            "optional `tenantId`). Default: the ControlPlaneConnection of that name if there "
            "is one, else the Secret."
        ),
    )


class ConnectionSpec(ApiModel):
    """Settings the kinds acting on the control plane share (AgentDeployment, Listener):
    management, deletion and connection."""

    management_policy: ManagementPolicy = Field(
        ManagementPolicy.FULL,
        description=(
            "Full: create, update and delete on the control plane to match this spec. "
            "ObserveOnly: find the existing resource (by id, else by its name or computeId) "
            "and report it in status; never create, change, redeploy or delete it, "
            "whatever the spec or a deletion says."
        ),
    )
    deletion_policy: DeletionPolicy = Field(
        DeletionPolicy.DELETE,
        description=(
            "Delete: delete the control-plane resource with the custom resource. "
            "Orphan: leave it on the control plane."
        ),
    )
    connection_ref: ConnectionReference | None = Field(
        None,
        description=(
            "The ControlPlaneConnection in this namespace to use. Default: the "
            "ControlPlaneConnection named `default` in this namespace, else the operator's "
            "own connection."
        ),
    )
