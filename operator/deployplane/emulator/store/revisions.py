"""Revisions: reading them, making a new one, and ending the ones it supersedes."""

from __future__ import annotations

import secrets as _random
import time
import uuid
from datetime import datetime

from sqlalchemy import insert, or_, select, update

from deployplane.api.models import (
    Page,
    Revision,
    RevisionStatus,
    Source,
    SourceRevisionConfig,
    SourceRevisionConfigStatus,
)
from deployplane.emulator.settings import WorkspaceConfig
from deployplane.emulator.store.db import DbConn
from deployplane.emulator.store.rows import (
    comma_separated,
    deployment_not_found,
    first_or_404,
    owned,
    page_offset,
    revision_model,
    revision_not_found,
    sql_offset,
)
from deployplane.emulator.store.tables import deployments, revisions

__all__ = [
    "check_deployment",
    "get_revision",
    "insert_revision",
    "list_revisions",
    "replace_latest",
    "supersede",
]

_IN_PROGRESS_EARLY = (RevisionStatus.CREATING.value, RevisionStatus.QUEUED.value)
_AGENT_STAGES = (RevisionStatus.AWAITING_DEPLOY.value, RevisionStatus.DEPLOYING.value)
_INSERT_REVISION = insert(revisions)  # built once: see rows.LOCK_DEPLOYMENT


def _commit_sha(source: Source) -> str | None:
    return _random.token_hex(20) if source is Source.GIT_HOST else None


async def insert_revision(
    conn: DbConn,
    *,
    revision_id: uuid.UUID,
    deployment_id: uuid.UUID,
    seq: int,
    source: Source,
    config: SourceRevisionConfig,
    now: datetime,
    step_seconds: float,
    commit_sha: str | None = None,
) -> Revision:
    """A new revision in CREATING; `commit_sha` reuses a built commit (a redeploy),
    else a git_host revision gets a fresh one."""
    revision = Revision(
        id=revision_id,
        created_at=now,
        updated_at=now,
        status=RevisionStatus.CREATING,
        source=source,
        source_revision_config=SourceRevisionConfigStatus(
            **config.model_dump(), repo_commit_sha=commit_sha or _commit_sha(source)
        ),
    )
    await conn.execute(
        _INSERT_REVISION,
        {
            "id": revision_id,
            "deployment_id": deployment_id,
            "seq": seq,
            "source": source.value,
            "status": RevisionStatus.CREATING.value,
            "repo_ref": config.repo_ref,
            "graph_config_path": config.graph_config_path,
            "image_uri": config.image_uri,
            "source_tarball_path": config.source_tarball_path,
            "langgraph_config_path": config.langgraph_config_path,
            "repo_commit_sha": revision.source_revision_config.repo_commit_sha,
            "created_at": now,
            "updated_at": now,
            "next_step_at": time.time() + step_seconds,
        },
    )
    return revision


async def replace_latest(
    conn: DbConn,
    *,
    deployment_id: uuid.UUID,
    latest_seq: int | None,
    source: Source,
    config: SourceRevisionConfig,
    now: datetime,
    step_seconds: float,
    commit_sha: str | None = None,
) -> uuid.UUID:
    """A new revision after the latest (`latest_seq`), superseding the unfinished ones;
    returns its id, for the caller to make it the deployment's latest."""
    await supersede(conn, deployment_id=deployment_id, now=now)
    revision_id = uuid.uuid4()
    await insert_revision(
        conn,
        revision_id=revision_id,
        deployment_id=deployment_id,
        seq=(latest_seq or 0) + 1,
        source=source,
        config=config,
        now=now,
        step_seconds=step_seconds,
        commit_sha=commit_sha,
    )
    return revision_id


async def supersede(conn: DbConn, *, deployment_id: uuid.UUID, now: datetime) -> None:
    """A newer revision ends the older unfinished ones: skipped if they never started
    building, interrupted if they had (a deployed one stays deployed)."""
    unfinished = (
        revisions.c.deployment_id == deployment_id,
        # On the timers, or handed to a listener agent (no timer: docs/dataplane.md).
        or_(revisions.c.next_step_at.is_not(None), revisions.c.status.in_(_AGENT_STAGES)),
    )
    ended = {"next_step_at": None, "updated_at": now, "remote_reconciled": True}
    # A deployed revision awaiting the re-render of a change (`patch.request_rerender`)
    # stays DEPLOYED: the newer revision carries the change.
    await conn.execute(
        update(revisions)
        .where(
            revisions.c.deployment_id == deployment_id,
            revisions.c.status == RevisionStatus.DEPLOYED.value,
            revisions.c.remote_reconciled.is_(False),
        )
        .values(**ended)
    )
    await conn.execute(
        update(revisions)
        .where(*unfinished, revisions.c.status.in_(_IN_PROGRESS_EARLY))
        .values(status=RevisionStatus.SKIPPED.value, **ended)
    )
    await conn.execute(
        update(revisions)
        .where(*unfinished)
        .values(status=RevisionStatus.INTERRUPTED.value, **ended)
    )


async def check_deployment(
    conn: DbConn, workspace: WorkspaceConfig, deployment_id: uuid.UUID
) -> None:
    """404 unless the deployment is in the workspace."""
    query = select(deployments.c.id).where(*owned(deployments, deployment_id, workspace.id))
    await first_or_404(conn, query, deployment_not_found, deployment_id)


async def get_revision(
    *,
    conn: DbConn,
    workspace: WorkspaceConfig,
    deployment_id: uuid.UUID,
    revision_id: uuid.UUID,
) -> Revision:
    row = (
        await conn.execute(
            select(revisions, deployments.c.workspace_id)
            .outerjoin(deployments, deployments.c.id == revisions.c.deployment_id)
            .where(revisions.c.id == revision_id, revisions.c.deployment_id == deployment_id)
        )
    ).first()
    if row is None or row.workspace_id != workspace.id:
        await check_deployment(conn, workspace, deployment_id)
        raise revision_not_found(revision_id)
    return revision_model(row)


async def list_revisions(
    *,
    conn: DbConn,
    workspace: WorkspaceConfig,
    deployment_id: uuid.UUID,
    status: str | None,
    remote_reconciled: bool | None,
    limit: int,
    offset: int,
) -> Page[Revision]:
    """Newest first; `status` is a comma-separated list of revision statuses."""
    await check_deployment(conn, workspace, deployment_id)
    query = select(revisions).where(revisions.c.deployment_id == deployment_id)
    statuses = comma_separated(status)
    if statuses is not None:
        query = query.where(revisions.c.status.in_(statuses))
    if remote_reconciled is not None:
        query = query.where(revisions.c.remote_reconciled == remote_reconciled)
    rows = (
        await conn.execute(
            query.order_by(revisions.c.seq.desc()).offset(sql_offset(offset)).limit(limit)
        )
    ).all()
    return Page[Revision](
        resources=[revision_model(row) for row in rows],
        offset=page_offset(offset, len(rows)),
    )
