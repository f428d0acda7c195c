"""The ControlPlaneConnection's status: what its last check found (the URL reached,
the API key Secret it protects).
"""

from __future__ import annotations

from typing import Self

from pydantic import Field

from deployplane.reconcile.status import ResourceStatus


class ControlPlaneConnectionStatus(ResourceStatus):
    """What the last check of the connection found (Ready: the API key was accepted)."""

    url: str | None = Field(None, description="The URL the last check reached.")
    protected_secret: str | None = Field(
        None,
        description=(
            "The API key Secret the last check read, which carries the finalizer "
            "deployplane.io/secret-protection while a connection names it (taken off "
            "once none does)."
        ),
    )

    @property
    def external_id(self) -> str | None:
        # A connection has no object of its own on the control plane: what it "observes"
        # is the control plane at its URL.
        return self.url

    def with_external_id(self, external_id: str | None) -> Self:
        return self.evolve(url=external_id)
