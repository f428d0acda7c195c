"""Status of both custom resources, and the conditions that tools read.

Conditions follow the kstatus convention so that `kubectl wait --for=condition=Ready`,
Flux and Argo CD (the chart's Lua health check) understand the resources without help:

- `Ready`: the latest revision is DEPLOYED and active (Listener: exists and is in sync).
- `Synced`: the last call to the control plane succeeded.
- `Reconciling`: a revision is in progress.
- `Stalled`: a terminal failure that only a change of spec (or of the world) can fix.

`lastTransitionTime` moves only when a condition's status flips, so a reconcile that
finds nothing new produces an identical status and therefore no write.
"""

from __future__ import annotations

from datetime import UTC, datetime
from enum import StrEnum
from typing import Any, Final

from pydantic import BaseModel, ConfigDict, Field

from deployplane.api.models import camelize


class ConditionType(StrEnum):
    READY = "Ready"
    SYNCED = "Synced"
    RECONCILING = "Reconciling"
    STALLED = "Stalled"


class Reason(StrEnum):
    """Named condition reasons (crossplane style: constants, never ad-hoc strings)."""

    AVAILABLE = "Available"
    DEPLOYED = "Deployed"
    RECONCILE_SUCCESS = "ReconcileSuccess"
    REVISION_IN_PROGRESS = "RevisionInProgress"
    CREATING = "Creating"
    DELETING = "Deleting"
    CREATE_FAILED = "CreateFailed"
    BUILD_FAILED = "BuildFailed"
    DEPLOY_FAILED = "DeployFailed"
    REVISION_SKIPPED = "RevisionSkipped"
    REVISION_INTERRUPTED = "RevisionInterrupted"
    REVISION_UNKNOWN = "RevisionUnknown"
    DEPENDENCY_NOT_READY = "DependencyNotReady"
    INVALID_SPEC = "InvalidSpec"
    CONFLICT = "Conflict"
    NOT_FOUND = "NotFound"
    UNAUTHORIZED = "Unauthorized"
    FORBIDDEN = "Forbidden"
    CONTROL_PLANE_UNAVAILABLE = "ControlPlaneUnavailable"
    RATE_LIMITED = "RateLimited"
    PAUSED = "Paused"


class StatusModel(BaseModel):
    """Status is written camelCase, as Kubernetes APIs are."""

    model_config = ConfigDict(
        alias_generator=camelize, validate_by_name=True, serialize_by_alias=True, extra="ignore"
    )


class Condition(StatusModel):
    """A condition in the Kubernetes shape (metav1.Condition)."""

    type: str = Field(description="Ready, Synced, Reconciling or Stalled.")
    status: str = Field(description="True, False or Unknown.")
    reason: str = Field(description="Machine-readable reason, CamelCase.")
    message: str = Field("", description="What happened and what to do about it.")
    last_transition_time: str = Field(description="When the status last flipped.")
    observed_generation: int | None = Field(None, description="Generation this was set for.")


class RevisionStatusView(StatusModel):
    """The latest revision as last observed."""

    id: str | None = Field(None, description="Revision id.")
    status: str | None = Field(None, description="Revision status, e.g. DEPLOYED.")
    repo_commit_sha: str | None = Field(None, description="Commit built (git_host).")
    repo_ref: str | None = Field(None, description="Git ref of the revision.")
    image_uri: str | None = Field(None, description="Image of the revision.")


class CreatePending(StatusModel):
    """Written before the create call so a crash between it and recording the id can be
    recovered by looking the resource up by its natural key instead of creating twice."""

    key: str = Field(description="Name (deployment) or computeId (listener) being created.")
    resource_version: str | None = Field(None, description="Object version at the time.")


class CommonStatus(StatusModel):
    observed_generation: int | None = Field(None, description="Generation last reconciled.")
    conditions: list[Condition] = Field(default_factory=list, description="Conditions.")
    create_pending: CreatePending | None = Field(None, description="Create in flight.")


class AgentDeploymentStatus(CommonStatus):
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


class ListenerStatus(CommonStatus):
    """Observed state of the listener on the control plane."""

    listener_id: str | None = Field(None, description="Listener id on the control plane.")
    version: str | None = Field(None, description="Listener version on the control plane.")


TRUE: Final = "True"
FALSE: Final = "False"
UNKNOWN: Final = "Unknown"


def now_rfc3339() -> str:
    return datetime.now(UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z")


def set_condition(
    previous: list[Condition],
    type_: ConditionType,
    status: str,
    reason: Reason | str,
    message: str,
    generation: int | None,
    *,
    now: str | None = None,
) -> Condition:
    """A condition carrying over lastTransitionTime unless its status flips."""
    old = next((c for c in previous if c.type == type_), None)
    changed = old is None or old.status != status
    return Condition(
        type=type_,
        status=status,
        reason=str(reason),
        message=message,
        last_transition_time=(now or now_rfc3339())
        if changed or old is None
        else old.last_transition_time,
        observed_generation=generation,
    )


def status_dict(status: StatusModel) -> dict[str, Any]:
    """The status as written to Kubernetes: camelCase, unset fields left out."""
    return status.model_dump(mode="json", exclude_none=True)
