"""The operations the vendor's CLI (`langgraph deploy`) calls besides the published
contract: an upload URL and a push token for a deployment, and the build and deploy
logs. Part of the service (they stay on in strict mode); docs/emulator.md says which
of their facts come from the client's code."""

from __future__ import annotations

import uuid

from fastapi import APIRouter, Body
from fastapi.responses import Response

from deployplane.api.models import (
    ErrorBody,
    LogsPage,
    LogsQuery,
    NotFoundBody,
    PushToken,
    PushTokenRequest,
    UploadUrl,
    UploadUrlRequest,
)
from deployplane.emulator.settings import Settings
from deployplane.emulator.store.artifacts import create_upload_url, push_token
from deployplane.emulator.store.logs import LogKind, read_logs
from deployplane.emulator.web.deps import InWorkspace, Responses

__all__ = ["deployment_router", "logs_router"]

_NOT_FOUND: Responses = {404: {"model": NotFoundBody, "description": "Not found."}}
_REFUSED: Responses = {
    400: {"model": ErrorBody, "description": "Not for this deployment's source."}
}

deployment_router = APIRouter(
    prefix="/v2/deployments/{deployment_id}", tags=["deployments"], responses=_NOT_FOUND
)
logs_router = APIRouter(prefix="/v1/projects/{project_id}", tags=["logs"], responses=_NOT_FOUND)


@deployment_router.post(
    "/upload-url",
    response_model=UploadUrl,
    responses=_REFUSED,
    summary="A signed URL to upload a source tarball (internal_source)",
    description=(
        "PUT the gzip tarball (at most 200 MB) to upload_url with upload_headers, once, "
        "before expires_at; then PATCH the deployment with revision_source internal_source "
        "and source_revision_config.source_tarball_path = object_path."
    ),
)
async def upload_url(
    deployment_id: uuid.UUID,
    call: InWorkspace,
    body: UploadUrlRequest = Body(default_factory=UploadUrlRequest),
) -> Response:
    settings: Settings = call.request.app.state.settings
    return await call.write(
        create_upload_url,
        deployment_id=deployment_id,
        base_url=str(call.request.base_url),
        url_seconds=settings.upload_url_seconds,
        max_bytes=settings.max_upload_bytes,
    )


@deployment_router.post(
    "/push-token",
    response_model=PushToken,
    responses=_REFUSED,
    summary="Registry credentials to push an image (internal_docker)",
)
async def push_token_route(
    deployment_id: uuid.UUID,
    call: InWorkspace,
    body: PushTokenRequest = Body(default_factory=PushTokenRequest),
) -> Response:
    return await call.read(push_token, deployment_id=deployment_id)


async def _logs(
    call: InWorkspace,
    kind: LogKind,
    body: LogsQuery,
    project: uuid.UUID,
    revision: uuid.UUID | None,
) -> Response:
    return await call.read(
        read_logs, deployment_id=project, revision_id=revision, kind=kind, query=body
    )


@logs_router.post(
    "/revisions/{revision_id}/build_logs",
    response_model=LogsPage,
    summary="Build logs of a revision",
)
async def build_logs(
    project_id: uuid.UUID, revision_id: uuid.UUID, body: LogsQuery, call: InWorkspace
) -> Response:
    return await _logs(call, LogKind.BUILD, body, project_id, revision_id)


@logs_router.post(
    "/revisions/{revision_id}/deploy_logs",
    response_model=LogsPage,
    summary="Deploy logs of a revision",
)
async def revision_deploy_logs(
    project_id: uuid.UUID, revision_id: uuid.UUID, body: LogsQuery, call: InWorkspace
) -> Response:
    return await _logs(call, LogKind.DEPLOY, body, project_id, revision_id)


@logs_router.post(
    "/deploy_logs",
    response_model=LogsPage,
    summary="Deploy logs of a deployment (every revision)",
)
async def deploy_logs(project_id: uuid.UUID, body: LogsQuery, call: InWorkspace) -> Response:
    return await _logs(call, LogKind.DEPLOY, body, project_id, None)
