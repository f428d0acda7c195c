"""A deployment and its latest revision, as an AgentDeployment's status and readiness."""

from __future__ import annotations

from enum import StrEnum

from deployplane.api.models import Deployment, DeploymentStatus, Revision, RevisionStatus
from deployplane.kinds.agentdeployment.status import AgentDeploymentStatus, RevisionStatusView
from deployplane.reconcile.external import Phase


class AgentDeploymentReason(StrEnum):
    """Condition reasons only an AgentDeployment gives (its revisions' life)."""

    DEPLOYED = "Deployed"
    REVISION_IN_PROGRESS = "RevisionInProgress"
    CREATING = "Creating"
    DELETING = "Deleting"
    CREATE_FAILED = "CreateFailed"
    BUILD_FAILED = "BuildFailed"
    DEPLOY_FAILED = "DeployFailed"
    REVISION_SKIPPED = "RevisionSkipped"
    REVISION_INTERRUPTED = "RevisionInterrupted"
    AWAITING_DATA_PLANE = "AwaitingDataPlane"
    CHANGE_APPLIED = "ChangeApplied"
    """An Event's only: a change without a revision runs (the revision was deployed
    before; its Ready=True again is not a second `Deployed`)."""


Reason = AgentDeploymentReason

_FAILURE_REASONS: dict[RevisionStatus, Reason] = {
    RevisionStatus.CREATE_FAILED: Reason.CREATE_FAILED,
    RevisionStatus.BUILD_FAILED: Reason.BUILD_FAILED,
    RevisionStatus.DEPLOY_FAILED: Reason.DEPLOY_FAILED,
    RevisionStatus.SKIPPED: Reason.REVISION_SKIPPED,
    RevisionStatus.INTERRUPTED: Reason.REVISION_INTERRUPTED,
}

Readiness = tuple[Phase, str, str]

FAILED_NEXT_STEP = "the next change of the spec rolls a new revision"
"""What a failed revision's message says comes next: a statement, not a request, so
that it never asks for a change already made (one made since is sent with a revision
of its own: `diff.diff`)."""


def revision_view(revision: Revision) -> RevisionStatusView:
    src = revision.source_revision_config
    return RevisionStatusView(
        id=str(revision.id),
        status=revision.status.value,
        repo_commit_sha=src.repo_commit_sha,
        repo_ref=src.repo_ref,
        image_uri=src.image_uri,
    )


def latest_deployed(
    known: AgentDeploymentStatus, dep: Deployment, revision: Revision | None
) -> bool:
    """Whether the deployment's latest revision is DEPLOYED, by a fresh read of it or
    else by what the status knows of that same revision (unknown: not deployed)."""
    latest = None if dep.latest_revision_id is None else str(dep.latest_revision_id)
    if revision is not None and str(revision.id) == latest:
        return revision.status is RevisionStatus.DEPLOYED
    view = known.revision
    return view is not None and view.id == latest and view.status == RevisionStatus.DEPLOYED.value


def settled_revision(known: AgentDeploymentStatus, dep: Deployment) -> bool:
    """The status already holds the deployment's latest revision, in a terminal state."""
    view = known.revision
    terminal = {s.value for s in RevisionStatus if s.is_terminal}
    return view is not None and view.id == str(dep.latest_revision_id) and view.status in terminal


def deployment_status(
    known: AgentDeploymentStatus,
    dep: Deployment,
    revision: Revision | None,
    secrets_hash: str | None,
) -> tuple[AgentDeploymentStatus, Readiness]:
    """The observed status fields (every one set, so each replaces what was known) and
    the readiness they mean. Without a fresh `revision`, what `known` says of the same
    revision is kept."""
    if revision is not None:
        view: RevisionStatusView | None = revision_view(revision)
    elif known.revision is not None and known.revision.id == str(dep.latest_revision_id):
        view = known.revision
    else:
        view = (
            RevisionStatusView(id=str(dep.latest_revision_id)) if dep.latest_revision_id else None
        )
    status = AgentDeploymentStatus(
        deployment_id=str(dep.id),
        latest_revision_id=_str(dep.latest_revision_id),
        active_revision_id=_str(dep.active_revision_id),
        deployment_status=dep.status.value,
        image_version=dep.image_version,
        url=dep.source_config.custom_url if dep.source_config else None,
        revision=view,
        secrets_hash=secrets_hash or known.secrets_hash,
    )
    return status, readiness(dep, view)


AWAITING_DATA_PLANE_MESSAGE = (
    "waiting for the listener to apply the change (remote_reconciled=false)"
)


def awaiting_data_plane() -> Readiness:
    """A change that made no revision (resources, say) is not applied yet: the data
    plane lists the deployment as not `remote_reconciled` (docs/kind.md)."""
    return Phase.PROGRESSING, Reason.AWAITING_DATA_PLANE, AWAITING_DATA_PLANE_MESSAGE


def change_applied(status: AgentDeploymentStatus) -> tuple[str, str]:
    """The Event of a change without a revision that now runs: its revision was
    deployed (and said so) before the change, so this is no second `Deployed`."""
    message = f"Revision {status.active_revision_id} runs the change: the data plane applied it"
    return Reason.CHANGE_APPLIED, message


def in_progress(revision: Revision) -> Readiness:
    """A poll found the revision still rolling."""
    message = f"Revision {revision.id} is {revision.status.value}"
    return Phase.PROGRESSING, Reason.REVISION_IN_PROGRESS, message


def readiness(dep: Deployment, view: RevisionStatusView | None) -> Readiness:
    if dep.status is DeploymentStatus.AWAITING_DELETE:
        return Phase.PROGRESSING, Reason.DELETING, f"Deployment {dep.id} is being deleted"
    revision_id = None if view is None else view.id
    if view is None or not revision_id or view.status is None:
        return Phase.PROGRESSING, Reason.CREATING, f"Revision {revision_id} was just created"
    status = RevisionStatus(view.status)
    if status is RevisionStatus.DEPLOYED:
        if str(dep.active_revision_id) == revision_id:
            return Phase.READY, Reason.DEPLOYED, f"Revision {revision_id} is deployed"
        return (
            Phase.PROGRESSING,
            Reason.REVISION_IN_PROGRESS,
            f"Revision {revision_id} is deployed but not yet active",
        )
    if status in _FAILURE_REASONS:
        return (
            Phase.FAILED,
            _FAILURE_REASONS[status],
            f"Revision {revision_id} ended {status.value}; {FAILED_NEXT_STEP}",
        )
    return (
        Phase.PROGRESSING,
        Reason.REVISION_IN_PROGRESS,
        f"Revision {revision_id} is {status.value}",
    )


def _str(value: object | None) -> str | None:
    return None if value is None else str(value)
