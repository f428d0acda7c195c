"""Storage functions: one keyword-only function per operation of the API.

They take a connection (already in a transaction for writes, see `Database.write`),
the caller's workspace, and API models; they return API models and raise the errors
of `errors.py`. Every query is scoped by workspace, so another workspace's ids are
simply not found.
"""

from __future__ import annotations

import secrets as _random
import time
import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import (
    ColumnElement,
    Row,
    and_,
    bindparam,
    delete,
    func,
    insert,
    not_,
    or_,
    select,
    update,
)
from sqlalchemy.exc import IntegrityError

from deployplane.api.models import (
    Deployment,
    DeploymentCreate,
    DeploymentPatch,
    DeploymentStatus,
    Listener,
    ListenerCreate,
    ListenerPatch,
    ListenerPut,
    Page,
    Revision,
    RevisionStatus,
    Secret,
    SecretName,
    SecretReference,
    Source,
    SourceConfig,
    SourceRevisionConfig,
    SourceRevisionConfigStatus,
)
from deployplane.controlplane import secretdigest
from deployplane.controlplane.db import (
    DbConn,
    deployments,
    listeners,
    revisions,
    text_position,
    tracing_projects,
    utcnow,
)
from deployplane.controlplane.errors import (
    ConflictError,
    InvalidError,
    NotFoundError,
    RefusedError,
    invalid,
)
from deployplane.controlplane.secretvalues import keep_secret_values
from deployplane.controlplane.settings import WorkspaceConfig
from deployplane.controlplane.validation import deployment_errors, repo_url_error

__all__ = [
    "BulkOutcome",
    "DeploymentFilters",
    "create_deployment",
    "create_listener",
    "delete_deployment",
    "delete_deployments",
    "delete_listener",
    "get_deployment",
    "get_listener",
    "get_revision",
    "list_deployments",
    "list_listeners",
    "list_revisions",
    "patch_deployment",
    "patch_listener",
    "put_listener",
    "redeploy_revision",
    "remote_reconciled_condition",
]

_IN_PROGRESS_EARLY = (RevisionStatus.CREATING.value, RevisionStatus.QUEUED.value)
_AGENT_STAGES = (RevisionStatus.AWAITING_DEPLOY.value, RevisionStatus.DEPLOYING.value)

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
    revisions.c.repo_ref,
    revisions.c.graph_config_path,
    revisions.c.image_uri,
    revisions.c.repo_commit_sha,
)


def _deployment_query() -> Any:
    return select(*_DEPLOYMENT_COLUMNS).outerjoin(
        revisions, revisions.c.id == deployments.c.latest_revision_id
    )


# Statements built once and executed with parameter dicts: constructing a statement
# (and its cache key) with literal values costs more than running it on SQLite.
_INSERT_DEPLOYMENT = insert(deployments)
_INSERT_TRACING_PROJECT = insert(tracing_projects)
_INSERT_REVISION = insert(revisions)
_LOCK_DEPLOYMENT = (
    select(deployments.c.id).where(deployments.c.id == bindparam("deployment_id")).with_for_update()
)
_GET_DEPLOYMENT = _deployment_query().where(
    deployments.c.id == bindparam("deployment_id"),
    deployments.c.workspace_id == bindparam("workspace_id"),
)


def _deployment_not_found(deployment_id: uuid.UUID) -> NotFoundError:
    return NotFoundError(f"Deployment ID {deployment_id} not found.")


def _listener_not_found(listener_id: uuid.UUID) -> NotFoundError:
    return NotFoundError(f"Listener ID {listener_id} not found.")


def _secret_errors(given: list[Secret], prefix: tuple[str, ...]) -> list[dict[str, Any]]:
    seen: set[str] = set()
    errors = []
    for index, secret in enumerate(given):
        if secret.name in seen:
            errors.append(invalid((*prefix, index, "name"), "duplicate secret name"))
        seen.add(secret.name)
    return errors


def _check_repository(source_config: SourceConfig, workspace: WorkspaceConfig) -> None:
    reason = repo_url_error(source_config, workspace)
    if reason is not None:
        raise RefusedError(reason)


def _service_url(deployment_id: uuid.UUID) -> str:
    return f"https://{deployment_id}.deployments.deployplane.example"


def _published_rule_errors(
    source: Source,
    config: SourceConfig | None,
    references: list[SecretReference] | None,
    *,
    current: dict[str, Any] | None,
) -> list[dict[str, Any]]:
    """The published rules of deployment_type, custom_url and secret_references, for a
    create (`current` None) or a PATCH (`current` the stored source_config)."""
    errors = []
    sc = ("body", "source_config")
    given = config.model_fields_set if config is not None else set()
    if "deployment_type" in given and config is not None:
        if source is not Source.GIT_HOST and config.deployment_type is not None:
            errors.append(invalid((*sc, "deployment_type"), "deployment_type is git_host only"))
        elif current is not None and _type_of(config) != current.get("deployment_type"):
            errors.append(invalid((*sc, "deployment_type"), "deployment_type cannot be changed"))
    if source is Source.GIT_HOST and config is not None and config.custom_url is not None:
        errors.append(invalid((*sc, "custom_url"), "custom_url is set by the service for git_host"))
    if source is not Source.EXTERNAL_DOCKER and references is not None:
        errors.append(
            invalid(("body", "secret_references"), "secret_references is external_docker only")
        )
    return errors


def _type_of(config: SourceConfig) -> str | None:
    return None if config.deployment_type is None else config.deployment_type.value


def _commit_sha(source: Source) -> str | None:
    return _random.token_hex(20) if source is Source.GIT_HOST else None


def _deployment_model(row: Row[Any]) -> Deployment:
    source = Source(row.source)
    return Deployment(
        id=row.id,
        tenant_id=row.workspace_id,
        name=row.name,
        source=source,
        source_config=SourceConfig.model_validate(row.source_config),
        source_revision_config=SourceRevisionConfigStatus(
            repo_ref=row.repo_ref,
            graph_config_path=row.graph_config_path,
            image_uri=row.image_uri,
            repo_commit_sha=row.repo_commit_sha,
        ),
        secrets=[SecretName(name=s["name"]) for s in row.secrets],
        secret_references=_secret_references(row.secret_references),
        created_at=row.created_at,
        updated_at=row.updated_at,
        status=DeploymentStatus(row.status),
        latest_revision_id=row.latest_revision_id,
        active_revision_id=row.active_revision_id,
        image_version=row.image_version,
    )


def _revision_model(row: Row[Any]) -> Revision:
    return Revision(
        id=row.id,
        created_at=row.created_at,
        updated_at=row.updated_at,
        status=RevisionStatus(row.status),
        source=Source(row.source),
        source_revision_config=SourceRevisionConfigStatus(
            repo_ref=row.repo_ref,
            graph_config_path=row.graph_config_path,
            image_uri=row.image_uri,
            repo_commit_sha=row.repo_commit_sha,
        ),
    )


def _listener_model(row: Row[Any]) -> Listener:
    return Listener.model_validate(row._mapping)


def _page_offset(offset: int, returned: int) -> int:
    """The published `offset` of a list body: always an integer, where the next page
    starts (a page shorter than the limit is the last)."""
    return offset + returned


def _secret_references(stored: list[dict[str, str]] | None) -> list[SecretReference] | None:
    if stored is None:
        return None
    return [SecretReference.model_validate(item) for item in stored]


def _stored_references(given: list[SecretReference] | None) -> list[dict[str, str]] | None:
    return None if given is None else [item.model_dump() for item in given]


def _references_patch(body: DeploymentPatch, stored: list[dict[str, str]] | None) -> dict[str, Any]:
    """The column update of a PATCH's `secret_references`, {} when unchanged; a change
    changes the environment, so it takes a new revision to apply."""
    if body.secret_references is None:
        return {}
    given = _stored_references(body.secret_references)
    return {} if given == stored else {"secret_references": given}


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


def _comma_separated(value: str | None) -> list[str] | None:
    if value is None:
        return None
    return [item.strip() for item in value.split(",") if item.strip()]


def _uuid_list(value: str | None, name: str) -> list[uuid.UUID] | None:
    items = _comma_separated(value)
    if items is None:
        return None
    try:
        return [uuid.UUID(item) for item in items]
    except ValueError:
        raise InvalidError(
            [invalid(("query", name), "must be a comma-separated list of UUIDs")]
        ) from None


async def _listener_exists(conn: DbConn, workspace_id: uuid.UUID, listener_id: uuid.UUID) -> bool:
    query = select(listeners.c.id).where(
        listeners.c.id == listener_id, listeners.c.workspace_id == workspace_id
    )
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


async def _insert_revision(
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
            "repo_commit_sha": revision.source_revision_config.repo_commit_sha,
            "created_at": now,
            "updated_at": now,
            "next_step_at": time.time() + step_seconds,
        },
    )
    return revision


# ------------------------------------------------------------------ deployments


async def create_deployment(
    *,
    conn: DbConn,
    body: DeploymentCreate,
    workspace: WorkspaceConfig,
    step_seconds: float,
) -> Deployment:
    source_config = body.source_config or SourceConfig()
    revision_config = body.source_revision_config or SourceRevisionConfig()
    given_secrets = body.secrets or []
    errors = deployment_errors(
        source=body.source,
        source_config=source_config,
        revision_config=revision_config,
        workspace=workspace,
    )
    errors += _secret_errors(given_secrets, ("body", "secrets"))
    errors += _published_rule_errors(
        body.source, body.source_config, body.secret_references, current=None
    )
    if source_config.listener_id is not None and not await _listener_exists(
        conn, workspace.id, source_config.listener_id
    ):
        errors.append(
            invalid(("body", "source_config", "listener_id"), "unknown listener in this workspace")
        )
    if errors:
        raise InvalidError(errors)
    if body.source is Source.GIT_HOST:
        _check_repository(source_config, workspace)

    deployment_id, revision_id = uuid.uuid4(), uuid.uuid4()
    now = utcnow()
    stored_config = source_config.model_dump(mode="json", exclude_none=True)
    if body.source is Source.GIT_HOST:  # the service sets a git_host deployment's URL
        stored_config["custom_url"] = _service_url(deployment_id)
    secret_records = secretdigest.records(conn.secret_key, deployment_id, given_secrets)
    try:
        # Deployment first: the (workspace, name) unique constraint decides races.
        await conn.execute(
            _INSERT_DEPLOYMENT,
            {
                "id": deployment_id,
                "workspace_id": workspace.id,
                "name": body.name,
                "source": body.source.value,
                "source_config": stored_config,
                "secrets": secret_records,
                "secret_references": _stored_references(body.secret_references),
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
                "name": body.name,
                "deployment_id": deployment_id,
                "created_at": now,
            },
        )
    except IntegrityError:
        # 400, as the published contract answers a create it refuses (it has no 409).
        raise RefusedError(
            "A deployment or tracing project with this name already exists."
        ) from None
    await keep_secret_values(conn, deployment_id, given_secrets, created=True)
    revision = await _insert_revision(
        conn,
        revision_id=revision_id,
        deployment_id=deployment_id,
        seq=1,
        source=body.source,
        config=revision_config,
        now=now,
        step_seconds=step_seconds,
    )
    # Answered from what was written rather than read back: one statement fewer.
    return Deployment(
        id=deployment_id,
        tenant_id=workspace.id,
        name=body.name,
        source=body.source,
        source_config=SourceConfig.model_validate(stored_config),
        source_revision_config=revision.source_revision_config,
        secrets=[SecretName(name=secret.name) for secret in given_secrets],
        secret_references=body.secret_references,
        created_at=now,
        updated_at=now,
        status=DeploymentStatus.AWAITING_DATABASE,
        latest_revision_id=revision_id,
        active_revision_id=None,
        image_version=None,
    )


async def get_deployment(
    *, conn: DbConn, workspace: WorkspaceConfig, deployment_id: uuid.UUID
) -> Deployment:
    row = (
        await conn.execute(
            _GET_DEPLOYMENT, {"deployment_id": deployment_id, "workspace_id": workspace.id}
        )
    ).first()
    if row is None:
        raise _deployment_not_found(deployment_id)
    return _deployment_model(row)


@dataclass(frozen=True)
class DeploymentFilters:
    """The published filters of GET /v2/deployments (`name` is the emulator's extension;
    `tag_value_ids` is accepted and ignored: the emulator has no tags)."""

    name: str | None = None
    name_contains: str | None = None
    status: str | None = None
    image_version: str | None = None
    deployment_type: str | None = None
    deployment_ids: str | None = None
    remote_reconciled: bool | None = None


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
    ids = _uuid_list(filters.deployment_ids, "deployment_ids")
    if ids is not None:
        query = query.where(deployments.c.id.in_(ids))
    if filters.remote_reconciled is not None:
        query = query.where(remote_reconciled_condition(filters.remote_reconciled))
    return query


async def list_deployments(
    *,
    conn: DbConn,
    workspace: WorkspaceConfig,
    filters: DeploymentFilters,
    limit: int,
    offset: int,
) -> Page[Deployment]:
    query = _deployment_query().where(deployments.c.workspace_id == workspace.id)
    query = _filtered_deployments(query, filters)
    query = query.order_by(deployments.c.created_at, deployments.c.id).offset(offset).limit(limit)
    rows = (await conn.execute(query)).all()
    return Page[Deployment](
        resources=[_deployment_model(row) for row in rows],
        offset=_page_offset(offset, len(rows)),
    )


async def patch_deployment(
    *,
    conn: DbConn,
    workspace: WorkspaceConfig,
    deployment_id: uuid.UUID,
    body: DeploymentPatch,
    step_seconds: float,
) -> tuple[Deployment, bool]:
    """Applies a PATCH; returns the deployment and whether a new revision was made."""
    if conn.concurrent:
        # Concurrent PATCHes of one deployment queue here, so each reads what the
        # previous one wrote: else both merge into the same old source_config and
        # insert the same revision seq. A statement of its own, before the read: a
        # locking read that waited would re-check only the locked row, joined to the
        # revision it saw before the wait.
        await conn.execute(_LOCK_DEPLOYMENT, {"deployment_id": deployment_id})
    current = (
        await conn.execute(
            select(
                deployments,
                revisions.c.seq,
                revisions.c.repo_ref,
                revisions.c.graph_config_path,
                revisions.c.image_uri,
            )
            .outerjoin(revisions, revisions.c.id == deployments.c.latest_revision_id)
            .where(deployments.c.id == deployment_id, deployments.c.workspace_id == workspace.id)
        )
    ).first()
    if current is None:
        raise _deployment_not_found(deployment_id)
    errors: list[dict[str, Any]] = []
    if body.name is not None and body.name != current.name:
        errors.append(invalid(("body", "name"), "name cannot be changed after creation"))
    if body.source is not None and body.source.value != current.source:
        errors.append(invalid(("body", "source"), "source cannot be changed after creation"))
    if errors:
        raise InvalidError(errors)
    if current.status == DeploymentStatus.AWAITING_DELETE.value:
        raise RefusedError(f"Deployment ID {deployment_id} is being deleted.")
    source = Source(current.source)

    stored_config: dict[str, Any] = dict(current.source_config)
    if body.source_config is not None:
        patch = body.source_config
        dumped = patch.model_dump(mode="json", exclude_none=True)
        for key in patch.model_fields_set:
            if key in dumped:
                stored_config[key] = dumped[key]  # nested objects replaced whole
            else:
                stored_config.pop(key, None)  # explicit null clears
    source_config = SourceConfig.model_validate(stored_config)

    revision_values = {
        "repo_ref": current.repo_ref,
        "graph_config_path": current.graph_config_path,
        "image_uri": current.image_uri,
    }
    new_revision = False
    if body.source_revision_config is not None:
        for key, value in body.source_revision_config.model_dump().items():
            if value is not None:  # nulls are ignored; a non-null value makes a revision
                revision_values[key] = value
                new_revision = True
    revision_config = SourceRevisionConfig(**revision_values)

    references = _references_patch(body, current.secret_references)
    new_revision = new_revision or bool(references)
    secret_records: list[dict[str, str]] = current.secrets
    if body.secrets is not None:
        errors += _secret_errors(body.secrets, ("body", "secrets"))
        if secretdigest.changed(conn.secret_key, deployment_id, body.secrets, current.secrets):
            new_revision = True
        # rewritten even when unchanged: digests of the old scheme become keyed ones
        secret_records = secretdigest.records(conn.secret_key, deployment_id, body.secrets)
        await keep_secret_values(conn, deployment_id, body.secrets, created=False)

    errors += _published_rule_errors(
        source, body.source_config, body.secret_references, current=current.source_config
    )
    errors += deployment_errors(
        source=source,
        source_config=source_config,
        revision_config=revision_config,
        workspace=workspace,
    )
    errors += await _patch_reference_errors(conn, workspace, body, source_config)
    if errors:
        raise InvalidError(errors)
    named = body.source_config.model_fields_set if body.source_config is not None else set()
    if source is Source.GIT_HOST and {"repo_url", "integration_id"} & named:
        _check_repository(source_config, workspace)

    now = utcnow()
    values: dict[str, Any] = {
        "source_config": stored_config,
        "secrets": secret_records,
        "updated_at": now,
    }
    values.update(references)
    if new_revision:
        await _supersede(conn, deployment_id=deployment_id, now=now)
        values["latest_revision_id"] = revision_id = uuid.uuid4()
        await _insert_revision(
            conn,
            revision_id=revision_id,
            deployment_id=deployment_id,
            seq=(current.seq or 0) + 1,
            source=source,
            config=revision_config,
            now=now,
            step_seconds=step_seconds,
        )
    await conn.execute(update(deployments).where(deployments.c.id == deployment_id).values(values))
    deployment = await get_deployment(conn=conn, workspace=workspace, deployment_id=deployment_id)
    return deployment, new_revision


async def _patch_reference_errors(
    conn: DbConn, workspace: WorkspaceConfig, body: DeploymentPatch, merged: SourceConfig
) -> list[dict[str, Any]]:
    """A listener_id the PATCH names must exist, as on POST: also when it is the current
    one, whose listener may be gone (deleted before the in-use check existed)."""
    named = body.source_config is not None and "listener_id" in body.source_config.model_fields_set
    listener_id = merged.listener_id
    if (
        named
        and listener_id is not None
        and not await _listener_exists(conn, workspace.id, listener_id)
    ):
        return [
            invalid(("body", "source_config", "listener_id"), "unknown listener in this workspace")
        ]
    return []


async def _supersede(conn: DbConn, *, deployment_id: uuid.UUID, now: datetime) -> None:
    """A newer revision ends the older unfinished ones: skipped if they never started
    building, interrupted if they had."""
    unfinished = (
        revisions.c.deployment_id == deployment_id,
        # On the timers, or handed to a listener agent (no timer: docs/dataplane.md).
        or_(revisions.c.next_step_at.is_not(None), revisions.c.status.in_(_AGENT_STAGES)),
    )
    await conn.execute(
        update(revisions)
        .where(*unfinished, revisions.c.status.in_(_IN_PROGRESS_EARLY))
        .values(
            status=RevisionStatus.SKIPPED.value,
            next_step_at=None,
            updated_at=now,
            remote_reconciled=True,
        )
    )
    await conn.execute(
        update(revisions)
        .where(*unfinished)
        .values(
            status=RevisionStatus.INTERRUPTED.value,
            next_step_at=None,
            updated_at=now,
            remote_reconciled=True,
        )
    )


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
            deployments.c.id == deployment_id,
            deployments.c.workspace_id == workspace.id,
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
        await _supersede(conn, deployment_id=deployment_id, now=now)
        return
    # Not marked: unknown here (404), or already being deleted (as good as done).
    await _check_deployment(conn, workspace, deployment_id)


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


# -------------------------------------------------------------------- revisions


async def _check_deployment(
    conn: DbConn, workspace: WorkspaceConfig, deployment_id: uuid.UUID
) -> None:
    found = await conn.execute(
        select(deployments.c.id).where(
            deployments.c.id == deployment_id, deployments.c.workspace_id == workspace.id
        )
    )
    if found.first() is None:
        raise _deployment_not_found(deployment_id)


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
        await _check_deployment(conn, workspace, deployment_id)
        raise NotFoundError(f"Revision ID {revision_id} not found.")
    return _revision_model(row)


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
    await _check_deployment(conn, workspace, deployment_id)
    query = select(revisions).where(revisions.c.deployment_id == deployment_id)
    statuses = _comma_separated(status)
    if statuses is not None:
        query = query.where(revisions.c.status.in_(statuses))
    if remote_reconciled is not None:
        query = query.where(revisions.c.remote_reconciled == remote_reconciled)
    rows = (
        await conn.execute(query.order_by(revisions.c.seq.desc()).offset(offset).limit(limit))
    ).all()
    return Page[Revision](
        resources=[_revision_model(row) for row in rows],
        offset=_page_offset(offset, len(rows)),
    )


async def _redeployable(
    conn: DbConn, workspace: WorkspaceConfig, deployment_id: uuid.UUID, revision_id: uuid.UUID
) -> tuple[Row[Any], Row[Any]]:
    """(the deployment's status and latest seq, the revision to redeploy), or the 404 /
    400 that says why not."""
    if conn.concurrent:  # as in patch_deployment: concurrent writers queue here
        await conn.execute(_LOCK_DEPLOYMENT, {"deployment_id": deployment_id})
    current = (
        await conn.execute(
            select(deployments.c.status, revisions.c.seq)
            .outerjoin(revisions, revisions.c.id == deployments.c.latest_revision_id)
            .where(deployments.c.id == deployment_id, deployments.c.workspace_id == workspace.id)
        )
    ).first()
    if current is None:
        raise _deployment_not_found(deployment_id)
    target = (
        await conn.execute(
            select(revisions).where(
                revisions.c.id == revision_id, revisions.c.deployment_id == deployment_id
            )
        )
    ).first()
    if target is None:  # also a revision of another deployment
        raise NotFoundError(f"Revision ID {revision_id} not found.")
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
    await _supersede(conn, deployment_id=deployment_id, now=now)
    new_id = uuid.uuid4()
    await _insert_revision(
        conn,
        revision_id=new_id,
        deployment_id=deployment_id,
        seq=(current.seq or 0) + 1,
        source=Source(target.source),
        config=SourceRevisionConfig(
            repo_ref=target.repo_ref,
            graph_config_path=target.graph_config_path,
            image_uri=target.image_uri,
        ),
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


# -------------------------------------------------------------------- listeners


_LISTENER_DUPLICATE = "A listener with this compute_id already exists in this workspace."


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
                compute_config=(
                    body.compute_config.model_dump(mode="json")
                    if body.compute_config is not None
                    else None
                ),
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
    row = (
        await conn.execute(
            select(listeners).where(
                listeners.c.id == listener_id, listeners.c.workspace_id == workspace.id
            )
        )
    ).first()
    if row is None:
        raise _listener_not_found(listener_id)
    return _listener_model(row)


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
            query.order_by(listeners.c.created_at, listeners.c.id).offset(offset).limit(limit)
        )
    ).all()
    return Page[Listener](
        resources=[_listener_model(row) for row in rows],
        offset=_page_offset(offset, len(rows)),
    )


def _immutable_errors(current: Listener, given: dict[str, Any] | None) -> list[dict[str, Any]]:
    """compute_type and compute_id cannot change; sending the same value is harmless."""
    errors = []
    for field in ("compute_type", "compute_id"):
        if given is not None and field in given and given[field] != getattr(current, field):
            errors.append(invalid(("body", field), f"{field} cannot be changed after creation"))
    return errors


async def patch_listener(
    *,
    conn: DbConn,
    workspace: WorkspaceConfig,
    listener_id: uuid.UUID,
    body: ListenerPatch,
    raw: dict[str, Any] | None,
) -> Listener:
    current = await get_listener(conn=conn, workspace=workspace, listener_id=listener_id)
    errors = _immutable_errors(current, raw)
    if errors:
        raise InvalidError(errors)
    values: dict[str, Any] = {"updated_at": utcnow()}
    if "version" in body.model_fields_set:
        values["version"] = body.version
    if "compute_config" in body.model_fields_set:
        values["compute_config"] = (
            body.compute_config.model_dump(mode="json") if body.compute_config else None
        )
    await conn.execute(update(listeners).where(listeners.c.id == listener_id).values(values))
    return await get_listener(conn=conn, workspace=workspace, listener_id=listener_id)


async def put_listener(
    *,
    conn: DbConn,
    workspace: WorkspaceConfig,
    listener_id: uuid.UUID,
    body: ListenerPut,
) -> Listener:
    current = await get_listener(conn=conn, workspace=workspace, listener_id=listener_id)
    errors = _immutable_errors(
        current, {"compute_type": body.compute_type, "compute_id": body.compute_id}
    )
    if errors:
        raise InvalidError(errors)
    await conn.execute(
        update(listeners)
        .where(listeners.c.id == listener_id)
        .values(
            version=body.version,
            compute_config=(
                body.compute_config.model_dump(mode="json") if body.compute_config else None
            ),
            updated_at=utcnow(),
        )
    )
    return await get_listener(conn=conn, workspace=workspace, listener_id=listener_id)


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
        delete(listeners).where(
            listeners.c.id == listener_id, listeners.c.workspace_id == workspace.id
        )
    )
    if not result.rowcount:
        raise _listener_not_found(listener_id)
