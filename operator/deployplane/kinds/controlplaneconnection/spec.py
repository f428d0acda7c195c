"""The ControlPlaneConnection's spec: a control plane's URL, the Secret key of its API
key, and a tenant.
"""

from __future__ import annotations

from pydantic import Field

from deployplane.api.models import ApiModel
from deployplane.kinds.common import ManagementPolicy, SecretKeySelector


class ControlPlaneConnectionSpec(ApiModel):
    """A control plane and the credentials to use it, shared by the resources that name it."""

    # An http(s) URL: checked by a CEL rule (kinds/controlplaneconnection/kind.py) whose
    # message says so.
    url: str = Field(
        min_length=1, max_length=2048, description="Base URL of the control plane's API."
    )
    api_key_secret_ref: SecretKeySelector | None = Field(
        None,
        description=(
            "The API key (sent as X-Api-Key): a key of a Secret in this namespace. Absent: "
            "no key is sent."
        ),
    )
    tenant_id: str | None = Field(
        None,
        min_length=1,
        max_length=253,
        description="Workspace (tenant) id, sent as X-Tenant-Id; none: the key's own.",
    )

    @property
    def management_policy(self) -> ManagementPolicy:
        """Always ObserveOnly, not a field: a connection owns nothing on the control
        plane, so the reconciler only ever observes through it (and deletes nothing)."""
        return ManagementPolicy.OBSERVE_ONLY
