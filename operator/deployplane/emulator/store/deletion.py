"""Deleting deployments: one or in bulk, marked AWAITING_DELETE by the API
(`delete_deployment`, `delete_deployments`); removed for good, with everything that
hangs off them, when the pipeline finds them due or a listener agent reports them
deleted (`remove_deployments`)."""

from __future__ import annotations

import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import delete, select, update

from deployplane.api.models import DeploymentStatus
from deployplane.emulator.errors import NotFoundError
from deployplane.emulator.settings import WorkspaceConfig
from deployplane.emulator.store.db import DbConn
from deployplane.emulator.store.revisions import check_deployment, supersede
from deployplane.emulator.store.rows import owned
from deployplane.emulator.store.tables import (
    dataplane_revisions,
    deployments,
    revision_logs,
    revisions,
    secret_values,
    tracing_projects,
    uploads,
    utcnow,
)

__all__ = ["BulkOutcome", "delete_deployment", "delete_deployments", "remove_deployments"]


async def delete_deployment(
    *,
    conn: DbConn,
    workspace: WorkspaceConfig,
    deployment_id: uuid.UUID,
    step_seconds: float,
    delete_tracing_project: bool = False,
) -> None:
    """Marks the deployment AWAITING_DELETE; the pipeline removes it one step later,
    with its tracing project only when `delete_tracing_project` (else that stays)."""
    now = utcnow()
    result = await conn.execute(
        update(deployments)
        .where(
            *owned(deployments, deployment_id, workspace.id),
            deployments.c.status != DeploymentStatus.AWAITING_DELETE.value,
        )
        .values(
            status=DeploymentStatus.AWAITING_DELETE.value,
            delete_at=time.time() + step_seconds,
            delete_tracing_project=delete_tracing_project,
            updated_at=now,
        )
    )
    if result.rowcount:
        await supersede(conn, deployment_id=deployment_id, now=now)
        return
    # Not marked: unknown here (404), or already being deleted (as good as done).
    await check_deployment(conn, workspace, deployment_id)


@dataclass(frozen=True)
class BulkOutcome:
    """One id's outcome in a bulk delete: HTTP-like `status` and, when failed, why."""

    deployment_id: uuid.UUID
    status: int
    detail: str | None = None


async def delete_deployments(
    *,
    conn: DbConn,
    workspace: WorkspaceConfig,
    deployment_ids: list[uuid.UUID],
    step_seconds: float,
) -> list[BulkOutcome]:
    """Bulk delete: each id is deleted as by `delete_deployment`, or reported unknown."""
    outcomes = []
    for deployment_id in dict.fromkeys(deployment_ids):  # each id once, in order
        try:
            await delete_deployment(
                conn=conn,
                workspace=workspace,
                deployment_id=deployment_id,
                step_seconds=step_seconds,
            )
        except NotFoundError as exc:
            outcomes.append(BulkOutcome(deployment_id, 404, exc.detail))
        else:
            outcomes.append(BulkOutcome(deployment_id, 204))
    return outcomes


async def remove_deployments(conn: DbConn, ids: list[Any]) -> None:
    """Removes deleted deployments with their revisions (and tracing projects, if the
    DELETE asked for that)."""
    if ids:
        await conn.execute(
            delete(dataplane_revisions).where(dataplane_revisions.c.deployment_id.in_(ids))
        )
        await conn.execute(delete(secret_values).where(secret_values.c.deployment_id.in_(ids)))
        await conn.execute(delete(uploads).where(uploads.c.deployment_id.in_(ids)))
        await conn.execute(delete(revision_logs).where(revision_logs.c.deployment_id.in_(ids)))
        await conn.execute(delete(revisions).where(revisions.c.deployment_id.in_(ids)))
        await _settle_tracing_projects(conn, ids)
        await conn.execute(delete(deployments).where(deployments.c.id.in_(ids)))


async def _settle_tracing_projects(conn: DbConn, gone: Sequence[Any]) -> None:
    """Deleted with their deployments only when the DELETE said delete_tracing_project;
    the others stay (detached), as the service keeps them: their names stay taken."""
    dropping = select(deployments.c.id).where(
        deployments.c.id.in_(gone), deployments.c.delete_tracing_project.is_(True)
    )
    await conn.execute(
        delete(tracing_projects).where(tracing_projects.c.deployment_id.in_(dropping))
    )
    await conn.execute(
        update(tracing_projects)
        .where(tracing_projects.c.deployment_id.in_(gone))
        .values(deployment_id=None)
    )
