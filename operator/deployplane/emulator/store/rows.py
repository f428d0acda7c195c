"""What every storage module shares: row <-> API model, the deployment query, the
not-found errors and the parsing of list filters.

Kept apart from the operations so that each entity's module reads as its operations
only, and a row is turned into a model in exactly one place.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

from sqlalchemy import ColumnElement, Row, Table, and_, bindparam, not_, or_, select

from deployplane.api.models import (
    DeploymentStatus,
    Listener,
    Revision,
    SecretReference,
    SourceRevisionConfig,
    SourceRevisionConfigStatus,
)
from deployplane.emulator.errors import InvalidError, NotFoundError, invalid
from deployplane.emulator.store.agentmode import agent_of
from deployplane.emulator.store.answers import Deployment, masked
from deployplane.emulator.store.db import DbConn
from deployplane.emulator.store.tables import deployments, revisions

__all__ = [
    "GET_DEPLOYMENT",
    "LOCK_DEPLOYMENT",
    "comma_separated",
    "deployment_model",
    "deployment_not_found",
    "deployment_query",
    "find_revision",
    "first_or_404",
    "listener_model",
    "listener_not_found",
    "owned",
    "page_offset",
    "remote_reconciled_condition",
    "revision_config",
    "revision_model",
    "revision_not_found",
    "secret_references",
    "service_url",
    "sql_offset",
    "stored_references",
    "uuid_list",
    "with_url",
]

_DEPLOYMENT_COLUMNS = (
    deployments.c.id,
    deployments.c.workspace_id,
    deployments.c.secret_references,
    deployments.c.name,
    deployments.c.source,
    deployments.c.source_config,
    deployments.c.secrets,
    deployments.c.status,
    deployments.c.latest_revision_id,
    deployments.c.active_revision_id,
    deployments.c.image_version,
    deployments.c.created_at,
    deployments.c.updated_at,
    deployments.c.agent_id,
    deployments.c.agent_environment,
    revisions.c.repo_ref,
    revisions.c.graph_config_path,
    revisions.c.image_uri,
    revisions.c.repo_commit_sha,
    revisions.c.source_tarball_path,
    revisions.c.langgraph_config_path,
)


def deployment_query() -> Any:
    """A deployment with its latest revision's source revision config."""
    return select(*_DEPLOYMENT_COLUMNS).outerjoin(
        revisions, revisions.c.id == deployments.c.latest_revision_id
    )


# Statements built once and executed with parameter dicts: constructing a statement
# (and its cache key) with literal values costs more than running it on SQLite.
LOCK_DEPLOYMENT = (
    select(deployments.c.id).where(deployments.c.id == bindparam("deployment_id")).with_for_update()
)
GET_DEPLOYMENT = deployment_query().where(
    deployments.c.id == bindparam("deployment_id"),
    deployments.c.workspace_id == bindparam("workspace_id"),
)


def deployment_not_found(deployment_id: uuid.UUID) -> NotFoundError:
    return NotFoundError(f"Deployment ID {deployment_id} not found.")


def revision_not_found(revision_id: uuid.UUID) -> NotFoundError:
    return NotFoundError(f"Revision ID {revision_id} not found.")


def listener_not_found(listener_id: uuid.UUID) -> NotFoundError:
    return NotFoundError(f"Listener ID {listener_id} not found.")


def owned(table: Table, resource_id: uuid.UUID, workspace_id: uuid.UUID) -> tuple[Any, Any]:
    """The where-clauses of `table`'s row `resource_id`, only if the workspace's: every
    query is scoped so, and another workspace's ids are simply not found."""
    return table.c.id == resource_id, table.c.workspace_id == workspace_id


async def first_or_404(
    conn: DbConn,
    query: Any,
    not_found: Callable[[uuid.UUID], NotFoundError],
    resource_id: uuid.UUID,
    parameters: dict[str, Any] | None = None,
) -> Row[Any]:
    """The first row of `query`, or the `not_found(resource_id)` error."""
    row = (await conn.execute(query, parameters)).first()
    if row is None:
        raise not_found(resource_id)
    return row


async def find_revision(
    conn: DbConn, deployment_id: uuid.UUID, revision_id: uuid.UUID, query: Any = None
) -> Row[Any]:
    """The revision `revision_id` of `deployment_id` (a revision of another deployment
    is not found either), read with `query` (default: the revision's own columns)."""
    query = select(revisions) if query is None else query
    query = query.where(revisions.c.id == revision_id, revisions.c.deployment_id == deployment_id)
    return await first_or_404(conn, query, revision_not_found, revision_id)


def revision_config(row: Row[Any]) -> SourceRevisionConfig:
    """The source revision config a revision row was made with (what a new revision
    after it, or a redeploy of it, starts from)."""
    return SourceRevisionConfig(
        repo_ref=row.repo_ref,
        graph_config_path=row.graph_config_path,
        image_uri=row.image_uri,
        source_tarball_path=row.source_tarball_path,
        langgraph_config_path=row.langgraph_config_path,
    )


def _revision_config(row: Row[Any]) -> SourceRevisionConfigStatus:
    return SourceRevisionConfigStatus(
        repo_ref=row.repo_ref,
        graph_config_path=row.graph_config_path,
        image_uri=row.image_uri,
        repo_commit_sha=row.repo_commit_sha,
        source_tarball_path=row.source_tarball_path,
        langgraph_config_path=row.langgraph_config_path,
    )


def service_url(deployment_id: uuid.UUID) -> str:
    """The URL the emulator serves a deployment at (`source_config.custom_url`, where the
    vendor's CLI looks for it)."""
    return f"https://{deployment_id}.deployments.deployplane.example"


def with_url(source_config: dict[str, Any], deployment_id: uuid.UUID) -> dict[str, Any]:
    """`source_config` with a URL: the stored `custom_url` (set by the client for
    external_docker, or reported by a listener agent) wins; else the service's own."""
    if source_config.get("custom_url"):
        return source_config
    return {**source_config, "custom_url": service_url(deployment_id)}


# The models take the columns they share names with from the row as they are (the
# enums and source_config are validated from the stored text and JSON); what is stored
# under another name or shape is given on top.
def deployment_model(row: Row[Any]) -> Deployment:
    return Deployment.model_validate(
        {
            **row._mapping,
            "tenant_id": row.workspace_id,
            "source_config": with_url(row.source_config, row.id),
            "source_revision_config": _revision_config(row),
            # stored with their digests: the names alone leave the store, each
            # with the mask where the published shape wants a value
            "secrets": masked(s["name"] for s in row.secrets),
            "secret_references": secret_references(row.secret_references),
            "agent": agent_of(row),
        }
    )


def revision_model(row: Row[Any]) -> Revision:
    return Revision.model_validate(
        {**row._mapping, "source_revision_config": _revision_config(row)}
    )


def listener_model(row: Row[Any]) -> Listener:
    # an older database may hold a null compute_config: answered as an empty object
    return Listener.model_validate({**row._mapping, "compute_config": row.compute_config or {}})


# A database integer holds no more; no workspace holds as many items.
_LAST_OFFSET = 2**62


def sql_offset(offset: int) -> int:
    """The OFFSET of a list query: the published `offset` has no maximum, and a page
    past the last item is empty however far past it starts."""
    return min(offset, _LAST_OFFSET)


def page_offset(offset: int, returned: int) -> int:
    """The published `offset` of a list body: always an integer, where the next page
    starts (a page shorter than the limit is the last)."""
    return offset + returned


def secret_references(stored: list[dict[str, str]] | None) -> list[SecretReference] | None:
    if stored is None:
        return None
    return [SecretReference.model_validate(item) for item in stored]


def stored_references(given: list[SecretReference] | None) -> list[dict[str, str]] | None:
    return None if given is None else [item.model_dump() for item in given]


def remote_reconciled_condition(value: bool) -> ColumnElement[bool]:
    """`remote_reconciled=value` of GET /v2/deployments: a deployment matches when its
    latest revision's flag is `value` (the deployment query joins that revision).

    The one place that rule lives. The data-plane extension widens it: a deployment
    being deleted is not reconciled until the listener agent removed its objects
    (docs/dataplane.md), so the agent finds deletions with the same filter."""
    deleting = deployments.c.status == DeploymentStatus.AWAITING_DELETE.value
    if value:
        return and_(revisions.c.remote_reconciled.is_(True), not_(deleting))
    return or_(revisions.c.remote_reconciled.is_(False), deleting)


def comma_separated(value: str | None) -> list[str] | None:
    if value is None:
        return None
    return [item.strip() for item in value.split(",") if item.strip()]


def uuid_list(value: str | None, name: str) -> list[uuid.UUID] | None:
    items = comma_separated(value)
    if items is None:
        return None
    try:
        return [uuid.UUID(item) for item in items]
    except ValueError:
        raise InvalidError(
            [invalid(("query", name), "must be a comma-separated list of UUIDs")]
        ) from None
