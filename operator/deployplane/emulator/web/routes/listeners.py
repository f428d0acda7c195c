"""Listeners: the compute infrastructure deployments run on."""

from __future__ import annotations

import uuid
from typing import Any

from fastapi import APIRouter, HTTPException, status
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
from deployplane.emulator import store
from deployplane.emulator.settings import WorkspaceConfig
from deployplane.emulator.web.deps import (
    InWorkspace,
    Limit,
    Offset,
    Responses,
    extension_param,
    refuse_nul_in_query,
)

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
async def create_listener(body: ListenerCreate, call: InWorkspace) -> Response:
    _listeners_allowed(call.workspace)
    return await call.write(store.create_listener, status.HTTP_201_CREATED, body=body)


@router.get("", response_model=Page[Listener], summary="List listeners")
async def list_listeners(call: InWorkspace, limit: Limit = 20, offset: Offset = 0) -> Response:
    compute_id = extension_param(call.request, "compute_id")  # an emulator extension
    refuse_nul_in_query(compute_id=compute_id)
    return await call.read(store.list_listeners, compute_id=compute_id, limit=limit, offset=offset)


@router.get(
    "/{listener_id}",
    response_model=Listener,
    responses={**_NOT_FOUND, **_FORBIDDEN},
    summary="Get a listener",
)
async def get_listener(listener_id: uuid.UUID, call: InWorkspace) -> Response:
    _listeners_allowed(call.workspace)
    return await call.read(store.get_listener, listener_id=listener_id)


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
    listener_id: uuid.UUID, body: ListenerPatch, call: InWorkspace
) -> Response:
    _listeners_allowed(call.workspace)
    raw = _immutables_given(await call.request.json())
    return await call.write(store.patch_listener, listener_id=listener_id, body=body, raw=raw)


_IN_USE: Responses = {409: {"model": NotFoundBody, "description": "Used by deployments."}}


@router.delete(
    "/{listener_id}",
    status_code=status.HTTP_204_NO_CONTENT,
    response_class=Response,
    responses={**_NOT_FOUND, **_FORBIDDEN, **_IN_USE},
    summary="Delete a listener",
)
async def delete_listener(listener_id: uuid.UUID, call: InWorkspace) -> Response:
    _listeners_allowed(call.workspace)
    return await call.write_no_content(store.delete_listener, listener_id=listener_id)
