"""Deployments and their revisions."""

from __future__ import annotations

import time
import uuid

from fastapi import APIRouter, Query, Request, status
from fastapi.responses import Response

from deployplane.api.models import (
    Deployment,
    DeploymentCreate,
    DeploymentPatch,
    DeploymentType,
    NotFoundBody,
    Page,
    Revision,
)
from deployplane.controlplane import store
from deployplane.controlplane.auth import CurrentWorkspace
from deployplane.controlplane.deps import (
    Limit,
    Offset,
    Responses,
    database_of,
    json_bytes_response,
    json_response,
    pipeline_of,
    read_cache_of,
    refuse_nul_in_body,
    refuse_nul_in_query,
)

__all__ = ["router"]


def notify_pipeline(request: Request) -> None:
    pipeline = pipeline_of(request)
    pipeline.notify(time.time() + pipeline.step_seconds)


router = APIRouter(prefix="/v2/deployments", tags=["deployments"])

_NOT_FOUND: Responses = {404: {"model": NotFoundBody, "description": "Not found."}}
_CONFLICT: Responses = {409: {"model": NotFoundBody, "description": "Name already in use."}}


@router.post(
    "",
    response_model=Deployment,
    status_code=status.HTTP_201_CREATED,
    responses=_CONFLICT,
    summary="Create a deployment",
)
async def create_deployment(
    body: DeploymentCreate, workspace: CurrentWorkspace, request: Request
) -> Response:
    await refuse_nul_in_body(request, body)
    async with database_of(request).write() as conn:
        deployment = await store.create_deployment(
            conn=conn,
            body=body,
            workspace=workspace,
            step_seconds=pipeline_of(request).step_seconds,
        )
    notify_pipeline(request)
    return json_response(deployment, status.HTTP_201_CREATED)


@router.get("", response_model=Page[Deployment], summary="List deployments")
async def list_deployments(
    workspace: CurrentWorkspace,
    request: Request,
    limit: Limit = 20,
    offset: Offset = 0,
    name_contains: str | None = Query(None, description="Substring of the name."),
    status: str | None = Query(None, description="A deployment status."),
    remote_reconciled: bool | None = Query(
        None, description="Whether the latest revision was applied by the data plane."
    ),
    tag_value_ids: str | None = Query(None, description="Comma-separated (accepted, ignored)."),
    image_version: str | None = Query(None, description="Exact image version."),
    deployment_type: DeploymentType | None = Query(None, description="git_host deployment type."),
    deployment_ids: str | None = Query(None, description="Comma-separated deployment ids."),
    name: str | None = Query(None, description="Exact name (emulator extension)."),
) -> Response:
    refuse_nul_in_query(
        name=name,
        name_contains=name_contains,
        status=status,
        image_version=image_version,
        tag_value_ids=tag_value_ids,
        deployment_ids=deployment_ids,
    )
    filters = store.DeploymentFilters(
        name=name,
        name_contains=name_contains,
        status=status,
        image_version=image_version,
        deployment_type=deployment_type.value if deployment_type is not None else None,
        deployment_ids=deployment_ids,
        remote_reconciled=remote_reconciled,
    )
    async with database_of(request).read() as conn:
        page = await store.list_deployments(
            conn=conn, workspace=workspace, filters=filters, limit=limit, offset=offset
        )
    return json_response(page)


@router.get(
    "/{deployment_id}",
    response_model=Deployment,
    responses=_NOT_FOUND,
    summary="Get a deployment",
)
async def get_deployment(
    deployment_id: uuid.UUID, workspace: CurrentWorkspace, request: Request
) -> Response:
    cache = read_cache_of(request)
    key = ("deployment", workspace.id, deployment_id)
    body = cache.get(key)
    if body is None:
        generation = cache.generation
        async with database_of(request).read() as conn:
            deployment = await store.get_deployment(
                conn=conn, workspace=workspace, deployment_id=deployment_id
            )
        body = deployment.model_dump_json().encode()
        cache.put(key, generation, body)
    return json_bytes_response(body)


@router.patch(
    "/{deployment_id}",
    response_model=Deployment,
    responses=_NOT_FOUND,
    summary="Update a deployment",
)
async def patch_deployment(
    deployment_id: uuid.UUID,
    body: DeploymentPatch,
    workspace: CurrentWorkspace,
    request: Request,
) -> Response:
    await refuse_nul_in_body(request, body)
    async with database_of(request).write() as conn:
        deployment, _ = await store.patch_deployment(
            conn=conn,
            workspace=workspace,
            deployment_id=deployment_id,
            body=body,
            step_seconds=pipeline_of(request).step_seconds,
        )
    notify_pipeline(request)
    return json_response(deployment)


@router.delete(
    "/{deployment_id}",
    response_model=Deployment,
    status_code=status.HTTP_202_ACCEPTED,
    responses=_NOT_FOUND,
    summary="Delete a deployment",
    description="Marks the deployment AWAITING_DELETE; it is removed shortly after.",
)
async def delete_deployment(
    deployment_id: uuid.UUID, workspace: CurrentWorkspace, request: Request
) -> Response:
    async with database_of(request).write() as conn:
        deployment = await store.delete_deployment(
            conn=conn,
            workspace=workspace,
            deployment_id=deployment_id,
            step_seconds=pipeline_of(request).step_seconds,
        )
    notify_pipeline(request)
    return json_response(deployment, status.HTTP_202_ACCEPTED)


@router.get(
    "/{deployment_id}/revisions",
    response_model=Page[Revision],
    responses=_NOT_FOUND,
    summary="List revisions, newest first",
)
async def list_revisions(
    deployment_id: uuid.UUID,
    workspace: CurrentWorkspace,
    request: Request,
    limit: Limit = 20,
    offset: Offset = 0,
    status: str | None = Query(None, description="Comma-separated revision statuses."),
    remote_reconciled: bool | None = Query(
        None, description="Whether the revision was applied by the data plane."
    ),
) -> Response:
    refuse_nul_in_query(status=status)
    async with database_of(request).read() as conn:
        page = await store.list_revisions(
            conn=conn,
            workspace=workspace,
            deployment_id=deployment_id,
            status=status,
            remote_reconciled=remote_reconciled,
            limit=limit,
            offset=offset,
        )
    return json_response(page)


@router.get(
    "/{deployment_id}/revisions/{revision_id}",
    response_model=Revision,
    responses=_NOT_FOUND,
    summary="Get a revision",
)
async def get_revision(
    deployment_id: uuid.UUID, revision_id: uuid.UUID, workspace: CurrentWorkspace, request: Request
) -> Response:
    cache = read_cache_of(request)
    key = ("revision", workspace.id, deployment_id, revision_id)
    body = cache.get(key)
    if body is None:
        generation = cache.generation
        async with database_of(request).read() as conn:
            revision = await store.get_revision(
                conn=conn,
                workspace=workspace,
                deployment_id=deployment_id,
                revision_id=revision_id,
            )
        body = revision.model_dump_json().encode()
        cache.put(key, generation, body)
    return json_bytes_response(body)
