"""The AgentDeployment's status: what the last pass observed of the deployment (its
id, revisions, URL), on top of every kind's (`reconcile.status.ResourceStatus`);
the deployment id is the external id.
"""

from __future__ import annotations

from typing import Self

from pydantic import Field

from deployplane.reconcile.approval import PendingChange
from deployplane.reconcile.conditions import StatusModel
from deployplane.reconcile.status import ResourceStatus


class RevisionStatusView(StatusModel):
    """The latest revision as last observed."""

    id: str | None = Field(None, description="Revision id.")
    status: str | None = Field(None, description="Revision status, e.g. DEPLOYED.")
    repo_commit_sha: str | None = Field(None, description="Commit built (git_host).")
    repo_ref: str | None = Field(None, description="Git ref of the revision.")
    image_uri: str | None = Field(None, description="Image of the revision.")


class AgentDeploymentStatus(ResourceStatus):
    """Observed state of the deployment on the control plane."""

    deployment_id: str | None = Field(None, description="Deployment id on the control plane.")
    latest_revision_id: str | None = Field(None, description="Latest revision id.")
    active_revision_id: str | None = Field(None, description="Currently deployed revision.")
    deployment_status: str | None = Field(None, description="Deployment status.")
    image_version: str | None = Field(None, description="Image version of the deployment.")
    url: str | None = Field(
        None, description="URL of the deployment (the service's sourceConfig.customUrl)."
    )
    revision: RevisionStatusView | None = Field(None, description="The latest revision.")
    secrets_hash: str | None = Field(
        None, description="Salted digest of the secret values last applied (never the values)."
    )
    awaiting_data_plane: bool | None = Field(
        None,
        description=(
            "A change that made no revision (resources, say) was sent and the data plane "
            "has not applied it yet (the deployment is remote_reconciled=false); unset "
            "once it has."
        ),
    )

    pending_change: PendingChange | None = Field(
        None,
        description=(
            "updatePolicy Manual: the change waiting for approval (what approving it "
            "does, why, which fields) and the generation it belongs to."
        ),
    )

    @property
    def external_id(self) -> str | None:
        return self.deployment_id

    def with_external_id(self, external_id: str | None) -> Self:
        return self.evolve(deployment_id=external_id)

    def held_change(self) -> PendingChange | None:
        return self.pending_change

    def with_pending_change(self, change: PendingChange | None) -> Self:
        return self.evolve(pending_change=change)

    @property
    def revision_status(self) -> str | None:
        return None if self.revision is None else self.revision.status

    def outputs(self) -> dict[str, str]:
        """The ConfigMap keys of spec.writeOutputsTo (empty string: not known yet)."""
        return {
            "deploymentId": self.deployment_id or "",
            "url": self.url or "",
            "latestRevisionId": self.latest_revision_id or "",
            "activeRevisionId": self.active_revision_id or "",
            "revisionStatus": self.revision_status or "",
        }
