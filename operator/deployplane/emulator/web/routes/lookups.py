"""Read-only lookups served from the config: git-host repositories, OAuth providers."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import Response

from deployplane.api.models import GitRepository, NotFoundBody, OAuthProvider
from deployplane.emulator.web.auth import CurrentWorkspace
from deployplane.emulator.web.deps import Responses

__all__ = ["router"]

router = APIRouter(tags=["lookups"])

_NOT_FOUND: Responses = {404: {"model": NotFoundBody, "description": "Not found."}}


@router.get(
    "/v1/integrations/git_host/{integration_id}/repos",
    response_model=list[GitRepository],
    responses=_NOT_FOUND,
    summary="List the repositories of a git-host integration",
)
async def list_repositories(integration_id: uuid.UUID, workspace: CurrentWorkspace) -> Response:
    for integration in workspace.integrations:
        if integration.id == integration_id:
            repos = [
                GitRepository(host_integration_id=integration.id, **repo.model_dump())
                for repo in integration.repositories
            ]
            body = b"[" + b",".join(r.model_dump_json().encode() for r in repos) + b"]"
            return Response(content=body, media_type="application/json")
    raise HTTPException(404, f"Integration ID {integration_id} not found.")


@router.get(
    "/v2/auth/providers/{provider_id}",
    response_model=OAuthProvider,
    responses=_NOT_FOUND,
    summary="Get an OAuth provider",
)
async def get_provider(provider_id: str, workspace: CurrentWorkspace, request: Request) -> Response:
    started: datetime = getattr(request.app.state, "started_at", datetime.now(UTC))
    for provider in workspace.oauth_providers:
        if provider.id == provider_id:
            data = provider.model_dump()
            data["created_at"] = provider.created_at or started
            data["updated_at"] = provider.updated_at or data["created_at"]
            model = OAuthProvider.model_validate(data)
            return Response(content=model.model_dump_json(), media_type="application/json")
    raise HTTPException(404, "OAuth provider not found.")
