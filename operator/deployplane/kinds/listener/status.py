"""The Listener's status: the listener's id (its external id) and version."""

from __future__ import annotations

from typing import Self

from pydantic import Field

from deployplane.reconcile.status import ResourceStatus


class ListenerStatus(ResourceStatus):
    """Observed state of the listener on the control plane."""

    listener_id: str | None = Field(None, description="Listener id on the control plane.")
    version: str | None = Field(None, description="Listener version on the control plane.")

    @property
    def external_id(self) -> str | None:
        return self.listener_id

    def with_external_id(self, external_id: str | None) -> Self:
        return self.evolve(listener_id=external_id)
