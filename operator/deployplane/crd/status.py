"""Status of both custom resources: the common part comes from the generic core
(`deployplane.reconcile.status.ResourceStatus`: observedGeneration and conditions),
each kind adds its observed fields and says which one is the external id.

These models are the CRD's status schema (the generator reads them) and the typed status
the reconciler and the externals pass around at run time; `to_kube` turns one into the
camelCase dict written to Kubernetes.
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


class ListenerStatus(ResourceStatus):
    """Observed state of the listener on the control plane."""

    listener_id: str | None = Field(None, description="Listener id on the control plane.")
    version: str | None = Field(None, description="Listener version on the control plane.")

    @property
    def external_id(self) -> str | None:
        return self.listener_id

    def with_external_id(self, external_id: str | None) -> Self:
        return self.evolve(listener_id=external_id)


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
