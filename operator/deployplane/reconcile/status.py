"""The status every kind shares, and the one place a status becomes Kubernetes JSON.

A kind's status model derives from `ResourceStatus` and names which of its fields holds
the external id (`external_id`/`with_external_id`), so the generic reconciler reads and
writes the id and the conditions through typed attributes, never through hand-spelled
camelCase keys. (The create marker is not status: `reconcile.marker`.)
"""

from __future__ import annotations

from typing import Any, Self, TypeVar

from pydantic import Field

from deployplane.reconcile.approval import PendingChange
from deployplane.reconcile.conditions import Condition, StatusModel


class ResourceStatus(StatusModel):
    """observedGeneration and conditions, common to every kind."""

    observed_generation: int | None = Field(None, description="Generation last reconciled.")
    conditions: list[Condition] = Field(default_factory=list, description="Conditions.")

    @property
    def external_id(self) -> str | None:
        """The id of the external resource on the control plane, once known."""
        raise NotImplementedError

    def with_external_id(self, external_id: str | None) -> Self:
        """A copy recording (or, with None, forgetting) the external id."""
        raise NotImplementedError

    def held_change(self) -> PendingChange | None:
        """The change held for approval (updatePolicy Manual); None for a kind
        without the gate."""
        return None

    def with_pending_change(self, change: PendingChange | None) -> Self:
        """A copy recording (None: clearing) the change held for approval; a kind
        without the gate never holds one, so this is the status unchanged."""
        return self

    @property
    def revision_status(self) -> str | None:
        """The status of the latest revision, for kinds that roll revisions (metrics)."""
        return None

    def outputs(self) -> dict[str, str]:
        """What `spec.writeOutputsTo` exports for workloads (`reconcile.outputs`);
        empty for a kind that exports nothing."""
        return {}

    def evolve(self, **changes: Any) -> Self:
        """A copy with `changes` (field names) applied; the fields it sets count as set."""
        copy = self.model_copy(update=changes)
        return copy

    def overlay(self, other: ResourceStatus) -> Self:
        """A copy with the fields `other` set explicitly (None included: it clears) laid
        over this one: what an observation reports replaces what was known, the rest stays."""
        return self.model_copy(update={k: getattr(other, k) for k in other.model_fields_set})


StatusT = TypeVar("StatusT", bound=ResourceStatus)


def to_kube(status: ResourceStatus) -> dict[str, Any]:
    """The status as written to Kubernetes: camelCase, unset fields left out (no
    conditions yet included, as Kubernetes' omitempty does). The only place a status model
    becomes the dict the apiserver stores."""
    exclude = None if status.conditions else {"conditions"}
    return status.model_dump(mode="json", exclude_none=True, exclude=exclude)
