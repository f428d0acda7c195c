"""Which deployments and revisions the listener agent acts on: pure functions of what
the control plane lists (docs/dataplane.md, "A round")."""

from __future__ import annotations

from uuid import UUID

from deployplane.api.models import Deployment, DeploymentStatus, Listener, Revision, RevisionStatus

__all__ = ["acts_on", "listener_namespaces", "listener_of", "rendered_inputs", "settled"]

# The revision states the agent acts on; DEPLOYED only while the database is not ready,
# or to re-render a change that made no revision.
_ACTIVE = frozenset(
    {RevisionStatus.AWAITING_DEPLOY, RevisionStatus.DEPLOYING, RevisionStatus.DEPLOYED}
)


def settled(deployment: Deployment) -> bool:
    """Its latest revision is the one running, and it is READY."""
    return (
        deployment.latest_revision_id == deployment.active_revision_id
        and deployment.status is DeploymentStatus.READY
    )


def acts_on(revision: Revision, deployment: Deployment, *, rerender: bool) -> bool:
    """The revision states the agent acts on: deploy stages; DEPLOYED while the
    database is awaited, or to re-render a change that made no revision."""
    if revision.status not in _ACTIVE:
        return False
    if revision.status is not RevisionStatus.DEPLOYED:
        return True
    return rerender or deployment.status is DeploymentStatus.AWAITING_DATABASE


def rendered_inputs(deployment: Deployment) -> tuple[object, ...]:
    """What of the deployment a render reads (its URL aside, which the agent sets)."""
    config = deployment.source_config
    return (
        deployment.latest_revision_id,
        None if config is None else config.model_dump(exclude={"custom_url"}),
        deployment.secrets,
        getattr(deployment, "secret_references", None),
    )


def listener_of(deployment: Deployment) -> UUID | None:
    config = deployment.source_config
    return config.listener_id if config is not None else None


def listener_namespaces(listener: Listener) -> list[str]:
    config = listener.compute_config
    return list((config.k8s_namespaces if config is not None else None) or [])
