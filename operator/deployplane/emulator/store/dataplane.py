"""The data-plane extension's storage: agent heartbeats, rollout reports, deletions.

Not part of the published contract (the service keeps its data-plane protocol
private), so none of this is served in strict mode; see docs/dataplane.md.

Who moves a revision's deploy stages:
- a listener whose agent sent a heartbeat within `AGENT_TTL_SECONDS` is *alive*;
- when a revision of a deployment on a live listener is due to leave AWAITING_DEPLOY,
  the pipeline hands it to the agent (a `dataplane_revisions` row, no more timer);
  a report from the agent takes a revision over the same way;
- a handed-off revision stays with the agent even if the agent goes quiet: the
  emulator cannot know whether the rollout happened, and DEPLOYED must mean it did;
- a deletion waits for the agent's "deleted" call while the agent is alive; if it
  goes quiet the timer removes the record, and the agent's orphan sweep removes the
  cluster objects when it is back.
"""

from __future__ import annotations

import uuid
from typing import Any

from fastapi import HTTPException
from sqlalchemy import insert, select, update

from deployplane.api.dataplane import (
    ReportedDeploymentStatus,
    ReportedStatus,
    RevisionReport,
    RevisionWork,
    ServerRuntime,
)
from deployplane.api.models import DeploymentStatus, RevisionStatus, Source
from deployplane.emulator.errors import ConflictError
from deployplane.emulator.rules.rollout import image_version, reconciled_on_reaching
from deployplane.emulator.settings import WorkspaceConfig
from deployplane.emulator.store.agents import check_listener, runs_on
from deployplane.emulator.store.db import DbConn
from deployplane.emulator.store.deletion import remove_deployments
from deployplane.emulator.store.logs import LogKind, write_lines
from deployplane.emulator.store.rows import deployment_not_found, find_revision, first_or_404, owned
from deployplane.emulator.store.secretvalues import read_secret_values
from deployplane.emulator.store.tables import dataplane_revisions, deployments, revisions, utcnow

__all__ = [
    "BUILT_IMAGE_REGISTRY",
    "built_image",
    "deletion_done",
    "report_revision",
    "report_url",
    "revision_work",
    "runtime_of",
]

BUILT_IMAGE_REGISTRY = "registry.deployplane.local"
"""Where the simulated build of a `git_host` revision "pushes" its image."""

# The revision states an agent may report on: the deploy stages it owns.
_AGENT_STAGES = (RevisionStatus.AWAITING_DEPLOY.value, RevisionStatus.DEPLOYING.value)


def built_image(name: str, repo_commit_sha: str | None) -> str:
    """The image the simulated build of a git_host revision produced.

    A pure function of published facts (name, commit), so it needs no storage and
    every caller (the work answer, docs, tests) agrees on it.
    """
    tag = (repo_commit_sha or "latest")[:12]
    return f"{BUILT_IMAGE_REGISTRY}/{name}:{tag}"


def _forbidden(deployment_id: uuid.UUID, listener_id: uuid.UUID) -> HTTPException:
    return HTTPException(
        status_code=403,
        detail=f"Deployment ID {deployment_id} does not run on listener {listener_id}.",
    )


async def _own_deployment(
    conn: DbConn,
    workspace: WorkspaceConfig,
    listener_id: uuid.UUID,
    deployment_id: uuid.UUID,
) -> Any:
    """The deployment row, locked for the write; 404 unknown, 403 another listener's."""
    await check_listener(conn, workspace, listener_id)
    query = select(deployments).where(*owned(deployments, deployment_id, workspace.id))
    if conn.concurrent:
        query = query.with_for_update()
    row = await first_or_404(conn, query, deployment_not_found, deployment_id)
    if runs_on(row.source_config, workspace.id) != listener_id:
        raise _forbidden(deployment_id, listener_id)
    return row


# A revision with the agent's last report on it.
_REVISION_WITH_REPORT = select(revisions, dataplane_revisions.c.message).outerjoin(
    dataplane_revisions, dataplane_revisions.c.revision_id == revisions.c.id
)


async def _revision_row(conn: DbConn, deployment_id: uuid.UUID, revision_id: uuid.UUID) -> Any:
    return await find_revision(conn, deployment_id, revision_id, _REVISION_WITH_REPORT)


async def revision_work(
    *,
    conn: DbConn,
    workspace: WorkspaceConfig,
    listener_id: uuid.UUID,
    deployment_id: uuid.UUID,
    revision_id: uuid.UUID,
) -> RevisionWork:
    deployment = await _own_deployment(conn, workspace, listener_id, deployment_id)
    row = await _revision_row(conn, deployment_id, revision_id)
    image = row.image_uri
    if Source(row.source) is Source.GIT_HOST:
        # Only once the (simulated) build is over is there an image to run.
        built = RevisionStatus(row.status) not in _BEFORE_BUILT
        image = built_image(deployment.name, row.repo_commit_sha) if built else None
    return RevisionWork(
        revision_id=revision_id,
        status=RevisionStatus(row.status),
        image_uri=image,
        message=row.message,
        runtime=runtime_of(Source(row.source)),
        secret_values=await read_secret_values(conn, deployment_id),
    )


def runtime_of(source: Source) -> ServerRuntime:
    """The server a revision's image runs: the emulator's remote build (internal_source)
    makes images of the in-memory server (docs/dataplane.md, "Runtimes"); any other
    image is the user's, built like the vendor's, so it gets the vendor's data plane."""
    return ServerRuntime.INMEM if source is Source.INTERNAL_SOURCE else ServerRuntime.POSTGRES


_BEFORE_BUILT = frozenset(
    {
        RevisionStatus.CREATING,
        RevisionStatus.QUEUED,
        RevisionStatus.AWAITING_BUILD,
        RevisionStatus.BUILDING,
        RevisionStatus.CREATE_FAILED,
        RevisionStatus.BUILD_FAILED,
        RevisionStatus.SKIPPED,
    }
)


async def report_revision(
    *,
    conn: DbConn,
    workspace: WorkspaceConfig,
    listener_id: uuid.UUID,
    deployment_id: uuid.UUID,
    revision_id: uuid.UUID,
    report: RevisionReport,
) -> RevisionWork:
    """Records a report and takes the revision off the timers.

    Repeating the revision's current status is a no-op success (an agent restarted
    between its report and its next look); a revision no longer in a deploy stage
    (superseded, or finished) is a 409 the agent takes as "stop".
    """
    deployment = await _own_deployment(conn, workspace, listener_id, deployment_id)
    row = await _revision_row(conn, deployment_id, revision_id)
    if row.status not in _AGENT_STAGES and row.status != report.status.value:
        raise ConflictError(
            f"Revision ID {revision_id} is {row.status}; it is no longer being deployed."
        )
    now = utcnow()
    await conn.execute(
        update(revisions)
        .where(revisions.c.id == revision_id)
        .values(
            status=report.status.value,
            next_step_at=None,
            updated_at=now,
            remote_reconciled=_reconciled(report),
        )
    )
    await _record(conn, row, listener_id, report.message, now)
    await _update_deployment(conn, deployment, revision_id, report, now)
    await write_lines(
        conn,
        deployment_id=deployment_id,
        revision_id=revision_id,
        kind=LogKind.DEPLOY,
        lines=[(line.level, line.message) for line in report.log_lines],
    )
    return RevisionWork(
        revision_id=revision_id,
        status=RevisionStatus(report.status.value),
        image_uri=None,
        message=report.message,
    )


def _reconciled(report: RevisionReport) -> bool:
    """The service's `remote_reconciled` for a reported revision: applied once terminal,
    except that a deployment still awaiting its database is not done: the agent keeps
    finding it with `remote_reconciled=false` until it can report READY."""
    waiting = report.deployment_status is ReportedDeploymentStatus.AWAITING_DATABASE
    return reconciled_on_reaching(RevisionStatus(report.status.value)) and not waiting


async def _record(
    conn: DbConn, row: Any, listener_id: uuid.UUID, message: str | None, now: Any
) -> None:
    values = {"message": message, "reported_at": now, "listener_id": listener_id}
    result = await conn.execute(
        update(dataplane_revisions)
        .where(dataplane_revisions.c.revision_id == row.id)
        .values(values)
    )
    if not result.rowcount:
        await conn.execute(
            insert(dataplane_revisions).values(
                revision_id=row.id, deployment_id=row.deployment_id, **values
            )
        )


async def _update_deployment(
    conn: DbConn, deployment: Any, revision_id: uuid.UUID, report: RevisionReport, now: Any
) -> None:
    values: dict[str, Any] = {"updated_at": now}
    deleting = deployment.status == DeploymentStatus.AWAITING_DELETE.value
    if report.deployment_status is not None and not deleting:
        values["status"] = report.deployment_status.value
    if report.status is ReportedStatus.DEPLOYED:
        revision = (
            await conn.execute(select(revisions).where(revisions.c.id == revision_id))
        ).one()
        values["active_revision_id"] = revision_id
        values["image_version"] = image_version(
            Source(deployment.source), revision.image_uri, revision.repo_commit_sha
        )
    await conn.execute(update(deployments).where(deployments.c.id == deployment.id).values(values))


async def deletion_done(
    *,
    conn: DbConn,
    workspace: WorkspaceConfig,
    listener_id: uuid.UUID,
    deployment_id: uuid.UUID,
) -> None:
    """The agent removed the deployment's objects: the record goes now."""
    deployment = await _own_deployment(conn, workspace, listener_id, deployment_id)
    if deployment.status != DeploymentStatus.AWAITING_DELETE.value:
        raise ConflictError(f"Deployment ID {deployment_id} is not being deleted.")
    await remove_deployments(conn, [deployment_id])


async def report_url(
    *,
    conn: DbConn,
    workspace: WorkspaceConfig,
    listener_id: uuid.UUID,
    deployment_id: uuid.UUID,
    url: str,
) -> None:
    """The agent's route exposes `url`: it becomes the deployment's
    `source_config.custom_url`, over any default the service set (the agent's route is
    where the deployment is really reached). The same URL again writes nothing."""
    deployment = await _own_deployment(conn, workspace, listener_id, deployment_id)
    config = dict(deployment.source_config or {})
    if config.get("custom_url") == url:
        return
    config["custom_url"] = url
    await conn.execute(
        update(deployments)
        .where(deployments.c.id == deployment_id)
        .values(source_config=config, updated_at=utcnow())
    )
