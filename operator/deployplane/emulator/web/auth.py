"""Who is calling: API keys and bearer tokens of the configured workspaces.

Credentials are compared in constant time against every configured one (there are
few), so the answer time does not reveal how much of a guess was right. They are
held in memory from the config; no database lookup per request.
"""

from __future__ import annotations

import hmac
import uuid
from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, HTTPException, Request, status

from deployplane.emulator.settings import WorkspaceConfig

__all__ = [
    "ADMIN_HEADER",
    "SECURITY_SCHEMES",
    "AdminAuthenticator",
    "Authenticator",
    "CurrentWorkspace",
    "current_workspace",
    "require_admin",
]

ADMIN_HEADER = "X-Admin-Key"

# The spec's three schemes, for the OpenAPI document (`openapi.py` requires them on
# every API operation: a credential, optionally with the tenant). The spec names them
# "API Key", "Tenant ID" and "Bearer Auth", which OpenAPI 3.1 does not allow as
# component names (^[a-zA-Z0-9._-]+$): the names here drop the space, and each
# description gives the spec's. The dependencies below read the headers themselves: one
# dependency per request instead of four keeps FastAPI's per-request work small.
SECURITY_SCHEMES: dict[str, dict[str, str]] = {
    "ApiKey": {
        "type": "apiKey",
        "in": "header",
        "name": "X-Api-Key",
        "description": "API Key: a workspace's API key.",
    },
    "TenantId": {
        "type": "apiKey",
        "in": "header",
        "name": "X-Tenant-Id",
        "description": "Tenant ID: which of the credential's workspaces to act in; "
        "only together with an API key or bearer token.",
    },
    "BearerAuth": {
        "type": "http",
        "scheme": "bearer",
        "description": "Bearer Auth: a workspace's bearer token.",
    },
}


@dataclass(frozen=True)
class _Credential:
    secret: bytes
    workspaces: tuple[WorkspaceConfig, ...]


class Authenticator:
    """Maps a presented credential to the workspaces it belongs to."""

    def __init__(self, workspaces: list[WorkspaceConfig]) -> None:
        by_key: dict[str, list[WorkspaceConfig]] = {}
        by_token: dict[str, list[WorkspaceConfig]] = {}
        for workspace in workspaces:
            for key in workspace.api_keys:
                by_key.setdefault(key, []).append(workspace)
            for token in workspace.bearer_tokens:
                by_token.setdefault(token, []).append(workspace)
        self._keys = [_Credential(k.encode(), tuple(w)) for k, w in by_key.items()]
        self._tokens = [_Credential(t.encode(), tuple(w)) for t, w in by_token.items()]

    @staticmethod
    def _match(presented: str, credentials: list[_Credential]) -> tuple[WorkspaceConfig, ...]:
        given = presented.encode()
        found: tuple[WorkspaceConfig, ...] = ()
        for credential in credentials:  # no early exit: constant time over the set
            if hmac.compare_digest(given, credential.secret):
                found = credential.workspaces
        return found

    def workspaces_for(
        self, *, api_key: str | None, bearer: str | None
    ) -> tuple[WorkspaceConfig, ...]:
        if api_key:
            return self._match(api_key, self._keys)
        if bearer:
            return self._match(bearer, self._tokens)
        return ()


def _unauthorized() -> HTTPException:
    return HTTPException(
        status_code=status.HTTP_401_UNAUTHORIZED,
        detail="Missing or invalid API key or bearer token.",
        headers={"WWW-Authenticate": "Bearer"},
    )


def _credential_workspaces(request: Request) -> tuple[WorkspaceConfig, ...]:
    authenticator: Authenticator = request.app.state.authenticator
    headers = request.headers
    bearer = None
    authorization = headers.get("authorization")
    if authorization:
        scheme, _, token = authorization.partition(" ")
        if scheme.lower() == "bearer":
            bearer = token.strip()
    found = authenticator.workspaces_for(api_key=headers.get("x-api-key"), bearer=bearer)
    if not found:
        raise _unauthorized()
    return found


async def current_workspace(request: Request) -> WorkspaceConfig:
    """The workspace a request acts in: 401 without a valid credential, 403 when
    X-Tenant-Id names a workspace the credential does not belong to."""
    found = _credential_workspaces(request)
    tenant_id = request.headers.get("x-tenant-id")
    if tenant_id is None:
        if len(found) > 1:  # an organization key: which workspace is not ours to guess
            raise HTTPException(
                status_code=status.HTTP_403_FORBIDDEN,
                detail=(
                    "This API key belongs to several workspaces: the request must name a "
                    "workspace in the X-Tenant-Id header."
                ),
            )
        return found[0]
    try:
        wanted = uuid.UUID(tenant_id)
    except ValueError:
        wanted = None
    for workspace in found:
        if workspace.id == wanted:
            return workspace
    raise HTTPException(
        status_code=status.HTTP_403_FORBIDDEN,
        detail="The credential does not belong to the workspace named by X-Tenant-Id.",
    )


class AdminAuthenticator:
    """The emulator's own credentials (`admin_api_keys`), sent as X-Admin-Key.

    Never a workspace's: the emulator's endpoints act for every tenant at once (faults
    delay and fail everyone's requests; statistics count everyone's)."""

    def __init__(self, keys: list[str]) -> None:
        self._keys = [_Credential(key.encode(), ()) for key in keys]

    def is_admin(self, presented: str | None) -> bool:
        if not presented:
            return False
        given = presented.encode()
        found = False
        for credential in self._keys:  # no early exit: constant time over the set
            if hmac.compare_digest(given, credential.secret):
                found = True
        return found


async def require_admin(request: Request) -> None:
    """For the emulator's own endpoints: 401 without a configured admin key."""
    admins: AdminAuthenticator = request.app.state.admin_authenticator
    if not admins.is_admin(request.headers.get(ADMIN_HEADER)):
        raise HTTPException(
            status_code=status.HTTP_401_UNAUTHORIZED,
            detail=f"Missing or invalid {ADMIN_HEADER} (one of the config's admin_api_keys).",
        )


CurrentWorkspace = Annotated[WorkspaceConfig, Depends(current_workspace)]
