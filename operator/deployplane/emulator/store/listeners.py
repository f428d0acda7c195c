"""Listeners, and the two questions deployments ask of them: does it exist, who uses it."""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy import delete, func, insert, select, update
from sqlalchemy.exc import IntegrityError

from deployplane.api.models import (
    ComputeConfig,
    DeploymentStatus,
    Listener,
    ListenerCreate,
    ListenerPatch,
    ListenerPut,
    Page,
)
from deployplane.emulator.errors import ConflictError, InvalidError, invalid
from deployplane.emulator.settings import WorkspaceConfig
from deployplane.emulator.store.db import DbConn
from deployplane.emulator.store.rows import (
    first_or_404,
    listener_model,
    listener_not_found,
    owned,
    page_offset,
    sql_offset,
)
from deployplane.emulator.store.tables import deployments, listeners, utcnow

__all__ = [
    "create_listener",
    "delete_listener",
    "get_listener",
    "list_listeners",
    "listener_exists",
    "patch_listener",
    "put_listener",
]

_LISTENER_DUPLICATE = "A listener with this compute_id already exists in this workspace."


async def listener_exists(conn: DbConn, workspace_id: uuid.UUID, listener_id: uuid.UUID) -> bool:
    query = select(listeners.c.id).where(*owned(listeners, listener_id, workspace_id))
    if conn.concurrent:
        # Held to the commit: a concurrent DELETE of the listener (FOR UPDATE) waits,
        # then counts this deployment among its users.
        query = query.with_for_update(read=True)
    found = await conn.execute(query)
    return found.first() is not None


async def _listener_users(conn: DbConn, workspace_id: uuid.UUID, listener_id: uuid.UUID) -> int:
    """How many deployments of the workspace run on the listener (those being deleted
    do not count: they are gone one step later and cannot be patched meanwhile)."""
    found = await conn.execute(
        select(func.count())
        .select_from(deployments)
        .where(
            deployments.c.workspace_id == workspace_id,
            deployments.c.source_config["listener_id"].as_string() == str(listener_id),
            deployments.c.status != DeploymentStatus.AWAITING_DELETE.value,
        )
    )
    return int(found.scalar_one())


def _stored_compute_config(config: ComputeConfig | None) -> dict[str, Any]:
    """A listener always has a compute_config (the published Listener requires an
    object): none given (a PUT or PATCH of null) is an empty one."""
    return (config or ComputeConfig()).model_dump(mode="json")


async def create_listener(
    *, conn: DbConn, workspace: WorkspaceConfig, body: ListenerCreate
) -> Listener:
    listener_id = uuid.uuid4()
    now = utcnow()
    try:
        await conn.execute(
            insert(listeners).values(
                id=listener_id,
                workspace_id=workspace.id,
                compute_type=body.compute_type.value,
                compute_id=body.compute_id,
                compute_config=_stored_compute_config(body.compute_config),
                version=body.version,
                created_at=now,
                updated_at=now,
            )
        )
    except IntegrityError:
        raise ConflictError(_LISTENER_DUPLICATE) from None
    return await get_listener(conn=conn, workspace=workspace, listener_id=listener_id)


async def get_listener(
    *, conn: DbConn, workspace: WorkspaceConfig, listener_id: uuid.UUID
) -> Listener:
    query = select(listeners).where(*owned(listeners, listener_id, workspace.id))
    return listener_model(await first_or_404(conn, query, listener_not_found, listener_id))


async def list_listeners(
    *,
    conn: DbConn,
    workspace: WorkspaceConfig,
    compute_id: str | None,
    limit: int,
    offset: int,
) -> Page[Listener]:
    query = select(listeners).where(listeners.c.workspace_id == workspace.id)
    if compute_id is not None:
        query = query.where(listeners.c.compute_id == compute_id)
    rows = (
        await conn.execute(
            query.order_by(listeners.c.created_at, listeners.c.id)
            .offset(sql_offset(offset))
            .limit(limit)
        )
    ).all()
    return Page[Listener](
        resources=[listener_model(row) for row in rows],
        offset=page_offset(offset, len(rows)),
    )


async def _changeable(
    conn: DbConn, workspace: WorkspaceConfig, listener_id: uuid.UUID, given: dict[str, Any] | None
) -> None:
    """404 unknown; 422 when compute_type or compute_id would change (sending the same
    value is harmless)."""
    current = await get_listener(conn=conn, workspace=workspace, listener_id=listener_id)
    errors = []
    for field in ("compute_type", "compute_id"):
        if given is not None and field in given and given[field] != getattr(current, field):
            errors.append(invalid(("body", field), f"{field} cannot be changed after creation"))
    if errors:
        raise InvalidError(errors)


async def _update_listener(
    conn: DbConn, workspace: WorkspaceConfig, listener_id: uuid.UUID, values: dict[str, Any]
) -> Listener:
    values["updated_at"] = utcnow()
    await conn.execute(update(listeners).where(listeners.c.id == listener_id).values(values))
    return await get_listener(conn=conn, workspace=workspace, listener_id=listener_id)


async def patch_listener(
    *,
    conn: DbConn,
    workspace: WorkspaceConfig,
    listener_id: uuid.UUID,
    body: ListenerPatch,
    raw: dict[str, Any] | None,
) -> Listener:
    await _changeable(conn, workspace, listener_id, raw)
    values: dict[str, Any] = {}
    if "version" in body.model_fields_set:
        values["version"] = body.version
    # null changes nothing (as a null source_revision_config field of a deployment PATCH):
    # the published Listener's compute_config is an object, never null
    if body.compute_config is not None:
        values["compute_config"] = _stored_compute_config(body.compute_config)
    return await _update_listener(conn, workspace, listener_id, values)


async def put_listener(
    *,
    conn: DbConn,
    workspace: WorkspaceConfig,
    listener_id: uuid.UUID,
    body: ListenerPut,
) -> Listener:
    given = {"compute_type": body.compute_type, "compute_id": body.compute_id}
    await _changeable(conn, workspace, listener_id, given)
    values = {
        "version": body.version,
        "compute_config": _stored_compute_config(body.compute_config),
    }
    return await _update_listener(conn, workspace, listener_id, values)


async def delete_listener(
    *, conn: DbConn, workspace: WorkspaceConfig, listener_id: uuid.UUID
) -> None:
    """Deletes an unused listener; 409 naming how many deployments still use it."""
    if conn.concurrent:  # deployments naming it meanwhile wait, or are counted
        await conn.execute(
            select(listeners.c.id).where(listeners.c.id == listener_id).with_for_update()
        )
    users = await _listener_users(conn, workspace.id, listener_id)
    if users:
        plural = "deployment uses" if users == 1 else "deployments use"
        raise ConflictError(f"Listener ID {listener_id} is in use: {users} {plural} it.")
    result = await conn.execute(
        delete(listeners).where(*owned(listeners, listener_id, workspace.id))
    )
    if not result.rowcount:
        raise listener_not_found(listener_id)
