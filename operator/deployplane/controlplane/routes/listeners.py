"""Listeners: the compute infrastructure deployments run on."""

from __future__ import annotations

import uuid
from typing import Any

from fastapi import APIRouter, HTTPException, Request, status
from fastapi.responses import Response

from deployplane.api.models import (
    ErrorBody,
    Listener,
    ListenerCreate,
    ListenerPatch,
    NotFoundBody,
    Page,
    camelize,
)
from deployplane.controlplane import store
from deployplane.controlplane.auth import CurrentWorkspace
from deployplane.controlplane.deps import (
    Limit,
    Offset,
    Responses,
    extension_param,
    read_answer,
    refuse_nul_in_query,
    write_answer,
    write_no_content,
)
from deployplane.controlplane.settings import WorkspaceConfig

__all__ = ["router"]

router = APIRouter(prefix="/v2/listeners", tags=["listeners"])

_NOT_FOUND: Responses = {404: {"model": NotFoundBody, "description": "Not found."}}
_CONFLICT: Responses = {409: {"model": NotFoundBody, "description": "compute_id already in use."}}
_IMMUTABLE = ("compute_type", "compute_id")
_FORBIDDEN: Responses = {403: {"model": ErrorBody, "description": "No listeners here."}}


def _listeners_allowed(workspace: WorkspaceConfig) -> None:
    """403 as the service answers a workspace that may not have listeners: listeners are
    for self-hosted deployments, so a `saas` workspace (git_host only) has none."""
    if workspace.mode == "saas":
        raise HTTPException(
            status.HTTP_403_FORBIDDEN,
            f"Listeners cannot be created for the service workspace ID '{workspace.id}'. "
            "Creating listeners is only allowed for the service organizations with "
            "self-hosted enterprise plans.",
        )


@router.post(
    "",
    response_model=Listener,
    status_code=status.HTTP_201_CREATED,
    responses={**_CONFLICT, **_FORBIDDEN},
    summary="Create a listener",
)
async def create_listener(
    body: ListenerCreate, workspace: CurrentWorkspace, request: Request
) -> Response:
    _listeners_allowed(workspace)
    return await write_answer(
        request, store.create_listener, status.HTTP_201_CREATED, workspace=workspace, body=body
    )


@router.get("", response_model=Page[Listener], summary="List listeners")
async def list_listeners(
    workspace: CurrentWorkspace,
    request: Request,
    limit: Limit = 20,
    offset: Offset = 0,
) -> Response:
    compute_id = extension_param(request, "compute_id")  # an emulator extension
    refuse_nul_in_query(compute_id=compute_id)
    return await read_answer(
        request,
        store.list_listeners,
        workspace=workspace,
        compute_id=compute_id,
        limit=limit,
        offset=offset,
    )


@router.get(
    "/{listener_id}",
    response_model=Listener,
    responses={**_NOT_FOUND, **_FORBIDDEN},
    summary="Get a listener",
)
async def get_listener(
    listener_id: uuid.UUID, workspace: CurrentWorkspace, request: Request
) -> Response:
    _listeners_allowed(workspace)
    return await read_answer(
        request, store.get_listener, workspace=workspace, listener_id=listener_id
    )


def _immutables_given(raw: Any) -> dict[str, Any] | None:
    """compute_type / compute_id as sent (snake or camel), which PATCH may not change.

    They are not fields of ListenerPatch, so they are read from the raw body.
    """
    if not isinstance(raw, dict):
        return None
    given = {}
    for field in _IMMUTABLE:
        for key in (field, camelize(field)):
            if key in raw:
                given[field] = raw[key]
                break
    return given


@router.patch(
    "/{listener_id}",
    response_model=Listener,
    responses={**_NOT_FOUND, **_FORBIDDEN},
    summary="Update a listener's version and compute_config",
)
async def patch_listener(
    listener_id: uuid.UUID,
    body: ListenerPatch,
    request: Request,
    workspace: CurrentWorkspace,
) -> Response:
    _listeners_allowed(workspace)
    raw = _immutables_given(await request.json())
    return await write_answer(
        request,
        store.patch_listener,
        workspace=workspace,
        listener_id=listener_id,
        body=body,
        raw=raw,
    )


_IN_USE: Responses = {409: {"model": NotFoundBody, "description": "Used by deployments."}}


@router.delete(
    "/{listener_id}",
    status_code=status.HTTP_204_NO_CONTENT,
    response_class=Response,
    responses={**_NOT_FOUND, **_FORBIDDEN, **_IN_USE},
    summary="Delete a listener",
)
async def delete_listener(
    listener_id: uuid.UUID, workspace: CurrentWorkspace, request: Request
) -> Response:
    _listeners_allowed(workspace)
    return await write_no_content(
        request, store.delete_listener, workspace=workspace, listener_id=listener_id
    )
