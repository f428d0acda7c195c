"""PATCH of a deployment: the database side of `patchdecision.decide_patch`.

Reads the deployment (locked where writers are concurrent), asks the pure decision
what the PATCH does, checks what only the database can tell (a named listener exists),
and writes the outcome: the new column values and, when the decision says so, a new
revision that supersedes the unfinished ones (or retries a latest one that ended
without deploying), or the re-render of the deployed one.
"""

from __future__ import annotations

import time
import uuid
from typing import Any

from sqlalchemy import Row, select, update

from deployplane.api.models import DeploymentPatch, RevisionStatus, Source
from deployplane.emulator.errors import InvalidError
from deployplane.emulator.rules.patchdecision import StoredDeployment, decide_patch
from deployplane.emulator.rules.validation import check_repository, unknown_listener
from deployplane.emulator.settings import WorkspaceConfig
from deployplane.emulator.store.agentmode import agent_of
from deployplane.emulator.store.answers import Deployment
from deployplane.emulator.store.artifacts import unknown_upload, upload_ready
from deployplane.emulator.store.db import DbConn
from deployplane.emulator.store.deployments import get_deployment
from deployplane.emulator.store.listeners import listener_exists
from deployplane.emulator.store.revisions import replace_latest
from deployplane.emulator.store.rows import (
    LOCK_DEPLOYMENT,
    deployment_not_found,
    first_or_404,
    owned,
    revision_config,
)
from deployplane.emulator.store.secretvalues import keep_secret_values
from deployplane.emulator.store.tables import deployments, revisions, utcnow

__all__ = ["patch_deployment", "request_rerender"]

_CURRENT = select(
    deployments,
    revisions.c.seq,
    revisions.c.repo_ref,
    revisions.c.graph_config_path,
    revisions.c.image_uri,
    revisions.c.source_tarball_path,
    revisions.c.langgraph_config_path,
    revisions.c.source.label("revision_source"),
    revisions.c.status.label("revision_status"),
    revisions.c.repo_commit_sha,
    revisions.c.remote_reconciled,
).outerjoin(revisions, revisions.c.id == deployments.c.latest_revision_id)


async def _current(conn: DbConn, workspace: WorkspaceConfig, deployment_id: uuid.UUID) -> Row[Any]:
    if conn.concurrent:
        # Concurrent PATCHes of one deployment queue here, so each reads what the
        # previous one wrote: else both merge into the same old source_config and
        # insert the same revision seq. A statement of its own, before the read: a
        # locking read that waited would re-check only the locked row, joined to the
        # revision it saw before the wait.
        await conn.execute(LOCK_DEPLOYMENT, {"deployment_id": deployment_id})
    query = _CURRENT.where(*owned(deployments, deployment_id, workspace.id))
    return await first_or_404(conn, query, deployment_not_found, deployment_id)


async def request_rerender(conn: DbConn, current: Row[Any], step_seconds: float) -> None:
    """A change the data plane renders from, with no new revision: the running revision
    is marked not `remote_reconciled` until the data plane applied it (a listener agent's
    report, else the simulated data plane one step later: `pipeline`). A revision still
    on its way is applied with the change when it deploys (one that ended without
    deploying is retried instead: `patchdecision.decide_patch`); one not reconciled yet (a
    change or a database still awaited) stays so."""
    if current.revision_status != RevisionStatus.DEPLOYED.value or not current.remote_reconciled:
        return
    await conn.execute(
        update(revisions)
        .where(revisions.c.id == current.latest_revision_id)
        .values(remote_reconciled=False, next_step_at=time.time() + step_seconds)
    )


def _stored(row: Row[Any]) -> StoredDeployment:
    return StoredDeployment(
        id=row.id,
        name=row.name,
        source=Source(row.source),
        status=row.status,
        source_config=row.source_config,
        secrets=row.secrets,
        secret_references=row.secret_references,
        revision_config=revision_config(row),
        revision_source=Source(row.revision_source) if row.revision_source else None,
        revision_status=RevisionStatus(row.revision_status) if row.revision_status else None,
        agent=agent_of(row),
    )


async def patch_deployment(
    *,
    conn: DbConn,
    workspace: WorkspaceConfig,
    deployment_id: uuid.UUID,
    body: DeploymentPatch,
    step_seconds: float,
) -> Deployment:
    """Applies a PATCH (a new revision when `decide_patch` says so)."""
    current = await _current(conn, workspace, deployment_id)
    decision = decide_patch(_stored(current), body, workspace=workspace, secret_key=conn.secret_key)
    errors = decision.errors
    listener_id = decision.listener_to_check
    if listener_id is not None and not await listener_exists(conn, workspace.id, listener_id):
        errors = [*errors, unknown_listener()]
    upload = decision.upload_to_check
    if upload is not None and not await upload_ready(conn, deployment_id, upload):
        errors = [*errors, unknown_upload()]
    if errors:
        raise InvalidError(errors)
    if decision.check_repository:
        check_repository(decision.source_config, workspace)
    if body.secrets is not None:
        await keep_secret_values(conn, deployment_id, body.secrets, created=False)
    now = utcnow()
    values: dict[str, Any] = {**decision.values, "updated_at": now}
    if decision.new_revision:
        values["latest_revision_id"] = await replace_latest(
            conn,
            deployment_id=deployment_id,
            latest_seq=current.seq,
            source=decision.revision_source,
            config=decision.revision_config,
            now=now,
            step_seconds=step_seconds,
            commit_sha=current.repo_commit_sha if decision.retry else None,
        )
    elif decision.rerender:
        await request_rerender(conn, current, step_seconds)
    await conn.execute(update(deployments).where(deployments.c.id == deployment_id).values(values))
    return await get_deployment(conn=conn, workspace=workspace, deployment_id=deployment_id)
