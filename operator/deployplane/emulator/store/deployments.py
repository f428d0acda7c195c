"""Deployments: create, read, list, and redeploy (roll back to) one of their revisions."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Row, insert, select, update
from sqlalchemy.exc import IntegrityError

from deployplane.api.models import (
    AgentEnvironment,
    DeploymentCreate,
    DeploymentStatus,
    Page,
    Revision,
    RevisionStatus,
    Source,
    SourceConfig,
    SourceRevisionConfig,
    SourceRevisionConfigStatus,
)
from deployplane.emulator.errors import InvalidError, RefusedError
from deployplane.emulator.rules import secretdigest
from deployplane.emulator.rules.validation import (
    INTERNAL_SOURCES,
    check_repository,
    deployment_errors,
    published_rule_errors,
    secret_errors,
    unknown_listener,
)
from deployplane.emulator.settings import WorkspaceConfig
from deployplane.emulator.store.agentmode import (
    agent_columns,
    agent_filtered,
    agent_taken,
    check_agent_mode,
    name_of_new,
)
from deployplane.emulator.store.answers import Deployment, masked
from deployplane.emulator.store.db import DbConn
from deployplane.emulator.store.listeners import listener_exists
from deployplane.emulator.store.revisions import insert_revision, replace_latest
from deployplane.emulator.store.rows import (
    GET_DEPLOYMENT,
    LOCK_DEPLOYMENT,
    deployment_model,
    deployment_not_found,
    deployment_query,
    find_revision,
    first_or_404,
    owned,
    page_offset,
    remote_reconciled_condition,
    revision_config,
    service_url,
    sql_offset,
    stored_references,
    uuid_list,
    with_url,
)
from deployplane.emulator.store.secretvalues import keep_secret_values
from deployplane.emulator.store.tables import (
    deployments,
    revisions,
    text_position,
    tracing_projects,
    utcnow,
)

__all__ = [
    "DeploymentFilters",
    "create_deployment",
    "get_deployment",
    "list_deployments",
    "redeploy_revision",
]

# Built once: see rows.LOCK_DEPLOYMENT.
_INSERT_DEPLOYMENT = insert(deployments)
_INSERT_TRACING_PROJECT = insert(tracing_projects)


async def _create_errors(
    conn: DbConn, body: DeploymentCreate, workspace: WorkspaceConfig
) -> list[dict[str, Any]]:
    """Everything wrong with a create (422), [] when valid."""
    source_config = body.source_config or SourceConfig()
    errors = deployment_errors(
        source=body.source,
        source_config=source_config,
        revision_config=body.source_revision_config or SourceRevisionConfig(),
        workspace=workspace,
        empty_allowed=body.source in INTERNAL_SOURCES,
    )
    errors += secret_errors(body.secrets or [], ("body", "secrets"))
    errors += published_rule_errors(
        body.source, body.source_config, body.secret_references, current=None
    )
    if source_config.listener_id is not None and not await listener_exists(
        conn, workspace.id, source_config.listener_id
    ):
        errors.append(unknown_listener())
    return errors


async def create_deployment(
    *,
    conn: DbConn,
    body: DeploymentCreate,
    workspace: WorkspaceConfig,
    step_seconds: float,
) -> Deployment:
    source_config = body.source_config or SourceConfig()
    check_agent_mode(workspace, body.agent)
    errors = await _create_errors(conn, body, workspace)
    if errors:
        raise InvalidError(errors)
    if body.source is Source.GIT_HOST:
        check_repository(source_config, workspace)
    deployment_id = uuid.uuid4()
    name = await name_of_new(conn, workspace, body, deployment_id)
    now = utcnow()
    stored_config = source_config.model_dump(mode="json", exclude_none=True)
    if body.source is Source.GIT_HOST:  # the service sets a git_host deployment's URL
        stored_config["custom_url"] = service_url(deployment_id)
    config = body.source_revision_config or SourceRevisionConfig()
    # The vendor CLI creates an internal_* deployment with an empty source revision
    # config and gives it its first revision by a PATCH (after uploading or pushing):
    # a create with nothing to build or run makes no revision.
    first = not (body.source in INTERNAL_SOURCES and not config.model_dump(exclude_none=True))
    new = _New(body, name, deployment_id)
    revision_id = await _insert_deployment(conn, new, workspace, stored_config, now, first=first)
    await keep_secret_values(conn, deployment_id, body.secrets or [], created=True)
    if revision_id is None:
        return _created(new, workspace, stored_config, None, now)
    revision = await insert_revision(
        conn,
        revision_id=revision_id,
        deployment_id=deployment_id,
        seq=1,
        source=body.source,
        config=config,
        now=now,
        step_seconds=step_seconds,
    )
    return _created(new, workspace, stored_config, revision, now)


@dataclass(frozen=True)
class _New:
    """A deployment being created: its body, and the name and id it gets."""

    body: DeploymentCreate
    name: str
    id: uuid.UUID


async def _insert_deployment(
    conn: DbConn,
    new: _New,
    workspace: WorkspaceConfig,
    stored_config: dict[str, Any],
    now: datetime,
    *,
    first: bool = True,
) -> uuid.UUID | None:
    """The deployment and its tracing project; returns the id its first revision takes
    (None: it has none yet).

    Deployment first: the (workspace, name) unique constraint, and the (workspace,
    agent, environment) unique index, decide races."""
    body, deployment_id = new.body, new.id
    revision_id = uuid.uuid4() if first else None
    secret_records = secretdigest.records(conn.secret_key, deployment_id, body.secrets or [])
    try:
        await conn.execute(
            _INSERT_DEPLOYMENT,
            {
                "id": deployment_id,
                "workspace_id": workspace.id,
                "name": new.name,
                **agent_columns(body.agent),
                "source": body.source.value,
                "source_config": stored_config,
                "secrets": secret_records,
                "secret_references": stored_references(body.secret_references),
                "status": DeploymentStatus.AWAITING_DATABASE.value,
                "latest_revision_id": revision_id,
                "active_revision_id": None,
                "image_version": None,
                "created_at": now,
                "updated_at": now,
                "delete_at": None,
            },
        )
        await conn.execute(
            _INSERT_TRACING_PROJECT,
            {
                "id": uuid.uuid4(),
                "workspace_id": workspace.id,
                "name": new.name,
                "deployment_id": deployment_id,
                "created_at": now,
            },
        )
    except IntegrityError as error:
        conflict = agent_taken(error)
        if conflict is not None:  # the vendor CLI's 409 for an agent
            raise conflict from None
        # 400, as the published contract answers a create it refuses (it has no 409).
        raise RefusedError(
            "A deployment or tracing project with this name already exists."
        ) from None
    return revision_id


def _created(
    new: _New,
    workspace: WorkspaceConfig,
    stored_config: dict[str, Any],
    revision: Revision | None,
    now: datetime,
) -> Deployment:
    """The answer to a create, from what was written rather than read back: one
    statement fewer."""
    body, deployment_id = new.body, new.id
    return Deployment(
        id=deployment_id,
        tenant_id=workspace.id,
        name=new.name,
        agent=body.agent,
        source=body.source,
        source_config=SourceConfig.model_validate(with_url(stored_config, deployment_id)),
        source_revision_config=(
            revision.source_revision_config if revision else SourceRevisionConfigStatus()
        ),
        secrets=masked(secret.name for secret in body.secrets or []),
        secret_references=body.secret_references,
        created_at=now,
        updated_at=now,
        status=DeploymentStatus.AWAITING_DATABASE,
        latest_revision_id=revision.id if revision else None,
        active_revision_id=None,
        image_version=None,
    )


async def get_deployment(
    *, conn: DbConn, workspace: WorkspaceConfig, deployment_id: uuid.UUID
) -> Deployment:
    parameters = {"deployment_id": deployment_id, "workspace_id": workspace.id}
    row = await first_or_404(conn, GET_DEPLOYMENT, deployment_not_found, deployment_id, parameters)
    return deployment_model(row)


@dataclass(frozen=True)
class DeploymentFilters:
    """The published filters of GET /v2/deployments (`name` is the emulator's extension;
    `tag_value_ids` is accepted and ignored: the emulator has no tags), and the vendor
    CLI's `agent_id` and `agent_environment`."""

    name: str | None = None
    name_contains: str | None = None
    status: str | None = None
    image_version: str | None = None
    tag_value_ids: str | None = None
    deployment_type: str | None = None
    deployment_ids: str | None = None
    remote_reconciled: bool | None = None
    agent_id: str | None = None
    agent_environment: AgentEnvironment | None = None


def _filtered_deployments(query: Any, filters: DeploymentFilters) -> Any:
    if filters.name is not None:
        query = query.where(deployments.c.name == filters.name)
    if filters.name_contains is not None:
        query = query.where(text_position(deployments.c.name, filters.name_contains) > 0)
    if filters.status is not None:
        query = query.where(deployments.c.status == filters.status)
    if filters.image_version is not None:
        query = query.where(deployments.c.image_version == filters.image_version)
    if filters.deployment_type is not None:
        stored_type = deployments.c.source_config["deployment_type"].as_string()
        query = query.where(stored_type == filters.deployment_type)
    ids = uuid_list(filters.deployment_ids, "deployment_ids")
    if ids is not None:
        query = query.where(deployments.c.id.in_(ids))
    if filters.remote_reconciled is not None:
        query = query.where(remote_reconciled_condition(filters.remote_reconciled))
    return agent_filtered(query, filters.agent_id, filters.agent_environment)


async def list_deployments(
    *,
    conn: DbConn,
    workspace: WorkspaceConfig,
    filters: DeploymentFilters,
    limit: int,
    offset: int,
) -> Page[Deployment]:
    check_agent_mode(workspace, filters.agent_id, filters.agent_environment)
    query = deployment_query().where(deployments.c.workspace_id == workspace.id)
    query = _filtered_deployments(query, filters)
    query = (
        query.order_by(deployments.c.created_at, deployments.c.id)
        .offset(sql_offset(offset))
        .limit(limit)
    )
    rows = (await conn.execute(query)).all()
    return Page[Deployment](
        resources=[deployment_model(row) for row in rows],
        offset=page_offset(offset, len(rows)),
    )


async def _redeployable(
    conn: DbConn, workspace: WorkspaceConfig, deployment_id: uuid.UUID, revision_id: uuid.UUID
) -> tuple[Row[Any], Row[Any]]:
    """(the deployment's status and latest seq, the revision to redeploy), or the 404 /
    400 that says why not."""
    if conn.concurrent:  # as in store.deploymentpatch: concurrent writers queue here
        await conn.execute(LOCK_DEPLOYMENT, {"deployment_id": deployment_id})
    query = (
        select(deployments.c.status, revisions.c.seq)
        .outerjoin(revisions, revisions.c.id == deployments.c.latest_revision_id)
        .where(*owned(deployments, deployment_id, workspace.id))
    )
    current = await first_or_404(conn, query, deployment_not_found, deployment_id)
    target = await find_revision(conn, deployment_id, revision_id)
    if current.status == DeploymentStatus.AWAITING_DELETE.value:
        raise RefusedError(f"Deployment ID {deployment_id} is being deleted.")
    if target.status != RevisionStatus.DEPLOYED.value:
        raise RefusedError(
            f"Revision ID {revision_id} cannot be redeployed: it is {target.status}, and "
            "only a revision that reached DEPLOYED can be."
        )
    return current, target


async def redeploy_revision(
    *,
    conn: DbConn,
    workspace: WorkspaceConfig,
    deployment_id: uuid.UUID,
    revision_id: uuid.UUID,
    step_seconds: float,
) -> Deployment:
    """Rolls back: a new revision with that revision's source revision config (and,
    for git_host, its built commit). Only a revision that was DEPLOYED can be."""
    current, target = await _redeployable(conn, workspace, deployment_id, revision_id)
    now = utcnow()
    new_id = await replace_latest(
        conn,
        deployment_id=deployment_id,
        latest_seq=current.seq,
        source=Source(target.source),
        config=revision_config(target),
        now=now,
        step_seconds=step_seconds,
        commit_sha=target.repo_commit_sha,
    )
    await conn.execute(
        update(deployments)
        .where(deployments.c.id == deployment_id)
        .values(latest_revision_id=new_id, updated_at=now)
    )
    return await get_deployment(conn=conn, workspace=workspace, deployment_id=deployment_id)
