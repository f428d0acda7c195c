"""Deployments and their revisions."""

from __future__ import annotations

import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import asdict
from typing import Any, TypeVar

from fastapi import APIRouter, Query, status
from fastapi.responses import JSONResponse, Response

from deployplane.api.models import (
    AgentEnvironment,
    BulkDeleteOutcome,
    BulkDeleteResult,
    DeploymentCreate,
    DeploymentPatch,
    DeploymentType,
    ErrorBody,
    NotFoundBody,
    Page,
    Revision,
)
from deployplane.emulator import store
from deployplane.emulator.store.answers import Deployment
from deployplane.emulator.web.deps import (
    InWorkspace,
    Limit,
    Offset,
    Responses,
    WorkspaceCall,
    extension_param,
    json_response,
    pipeline_of,
    refuse_nul_in_query,
)

T = TypeVar("T")

__all__ = ["one_router", "router"]


async def _scheduling(
    call: WorkspaceCall, write: Callable[..., Awaitable[T]], *args: Any, **arguments: Any
) -> T:
    """A write that gives the pipeline work (`write` is `call.write`, `call.write_result`
    or `call.write_no_content`): done with the pipeline's step_seconds, and the pipeline
    woken once it is committed (not when it fails)."""
    pipeline = pipeline_of(call.request)
    result = await write(*args, step_seconds=pipeline.step_seconds, **arguments)
    pipeline.notify(time.time() + pipeline.step_seconds)
    return result


router = APIRouter(prefix="/v2/deployments", tags=["deployments"])

_NOT_FOUND: Responses = {404: {"model": NotFoundBody, "description": "Not found."}}
# The calls on one deployment: each answers 404 when the deployment is not in the
# workspace. A router of its own, included in the app after `router`, rather than
# included in it: a nested router's routes know only their own part of the path, and
# requests are counted by the route's path (middleware.RequestStats).
one_router = APIRouter(
    prefix="/v2/deployments/{deployment_id}", tags=["deployments"], responses=_NOT_FOUND
)
_REFUSED: Responses = {
    400: {"model": ErrorBody, "description": "Refused; the detail says why in one sentence."}
}
_AGENT_MODE_OFF: Responses = {
    403: {
        "model": ErrorBody,
        "description": (
            "Agent fields where agent mode is off; or X-Tenant-Id names a workspace the "
            "credential does not belong to."
        ),
    }
}
_AGENT_TAKEN: Responses = {
    409: {"model": ErrorBody, "description": "The agent has a deployment in that environment."}
}


@router.post(
    "",
    response_model=Deployment,
    status_code=status.HTTP_201_CREATED,
    responses={**_REFUSED, **_AGENT_MODE_OFF, **_AGENT_TAKEN},
    summary="Create a deployment",
)
async def create_deployment(body: DeploymentCreate, call: InWorkspace) -> Response:
    return await _scheduling(
        call, call.write, store.create_deployment, status.HTTP_201_CREATED, body=body
    )


@router.get(
    "", response_model=Page[Deployment], responses=_AGENT_MODE_OFF, summary="List deployments"
)
async def list_deployments(
    call: InWorkspace,
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
    # The vendor CLI's (`langgraph deploy list --agent-id --agent-environment`).
    agent_id: str | None = Query(None, description="Exact agent id."),
    agent_environment: AgentEnvironment | None = Query(None, description="An environment."),
) -> Response:
    filters = store.DeploymentFilters(
        name=extension_param(call.request, "name"),  # exact name: an emulator extension
        name_contains=name_contains,
        status=status,
        image_version=image_version,
        tag_value_ids=tag_value_ids,
        deployment_type=deployment_type.value if deployment_type is not None else None,
        deployment_ids=deployment_ids,
        remote_reconciled=remote_reconciled,
        agent_id=agent_id,
        agent_environment=agent_environment,
    )
    refuse_nul_in_query(**asdict(filters))
    return await call.read(store.list_deployments, filters=filters, limit=limit, offset=offset)


@one_router.get(
    "",
    response_model=Deployment,
    summary="Get a deployment",
)
async def get_deployment(deployment_id: uuid.UUID, call: InWorkspace) -> Response:
    return await call.cached(
        ("deployment", call.workspace.id, deployment_id),
        store.get_deployment,
        deployment_id=deployment_id,
    )


@one_router.patch(
    "",
    response_model=Deployment,
    responses=_REFUSED,
    summary="Update a deployment",
)
async def patch_deployment(
    deployment_id: uuid.UUID, body: DeploymentPatch, call: InWorkspace
) -> Response:
    return await _scheduling(
        call, call.write, store.patch_deployment, deployment_id=deployment_id, body=body
    )


@one_router.delete(
    "",
    status_code=status.HTTP_204_NO_CONTENT,
    response_class=Response,
    summary="Delete a deployment",
    description=(
        "Marks the deployment AWAITING_DELETE; it is removed shortly after. Its tracing "
        "project stays unless delete_tracing_project is true."
    ),
)
async def delete_deployment(
    deployment_id: uuid.UUID,
    call: InWorkspace,
    delete_tracing_project: bool = Query(
        False, description="Delete the tracing project made with the deployment too."
    ),
) -> Response:
    return await _scheduling(
        call,
        call.write_no_content,
        store.delete_deployment,
        deployment_id=deployment_id,
        delete_tracing_project=delete_tracing_project,
    )


@router.delete(
    "",
    response_model=BulkDeleteResult,
    responses={
        207: {"model": BulkDeleteResult, "description": "Some ids failed; see each outcome."},
        **_NOT_FOUND,
    },
    summary="Delete several deployments",
)
async def delete_deployments(
    call: InWorkspace,
    deployment_ids: list[uuid.UUID] = Query(
        ..., max_length=100, description="Deployments to delete (at most 100)."
    ),
) -> Response:
    outcomes: list[store.BulkOutcome] = await _scheduling(
        call, call.write_result, store.delete_deployments, deployment_ids=deployment_ids
    )
    failed = [o for o in outcomes if o.status != status.HTTP_204_NO_CONTENT]
    if failed and len(failed) == len(outcomes):
        unknown = ", ".join(str(o.deployment_id) for o in failed)
        noun = "ID" if len(failed) == 1 else "IDs"
        return JSONResponse({"detail": f"Deployment {noun} {unknown} not found."}, 404)
    body = BulkDeleteResult(
        results=[
            BulkDeleteOutcome(deployment_id=o.deployment_id, status=o.status, detail=o.detail)
            for o in outcomes
        ]
    )
    return json_response(body, status.HTTP_207_MULTI_STATUS if failed else status.HTTP_200_OK)


@one_router.post(
    "/revisions/{revision_id}/redeploy",
    response_model=Deployment,
    responses=_REFUSED,
    summary="Redeploy (roll back to) an earlier revision",
    description="A new revision with that revision's source revision config.",
)
async def redeploy_revision(
    deployment_id: uuid.UUID, revision_id: uuid.UUID, call: InWorkspace
) -> Response:
    return await _scheduling(
        call,
        call.write,
        store.redeploy_revision,
        deployment_id=deployment_id,
        revision_id=revision_id,
    )


@one_router.get(
    "/revisions",
    response_model=Page[Revision],
    summary="List revisions, newest first",
)
async def list_revisions(
    deployment_id: uuid.UUID,
    call: InWorkspace,
    limit: Limit = 20,
    offset: Offset = 0,
    status: str | None = Query(None, description="Comma-separated revision statuses."),
    remote_reconciled: bool | None = Query(
        None, description="Whether the revision was applied by the data plane."
    ),
) -> Response:
    refuse_nul_in_query(status=status)
    return await call.read(
        store.list_revisions,
        deployment_id=deployment_id,
        status=status,
        remote_reconciled=remote_reconciled,
        limit=limit,
        offset=offset,
    )


@one_router.get(
    "/revisions/{revision_id}",
    response_model=Revision,
    summary="Get a revision",
)
async def get_revision(
    deployment_id: uuid.UUID, revision_id: uuid.UUID, call: InWorkspace
) -> Response:
    return await call.cached(
        ("revision", call.workspace.id, deployment_id, revision_id),
        store.get_revision,
        deployment_id=deployment_id,
        revision_id=revision_id,
    )
