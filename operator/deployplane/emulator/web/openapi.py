"""The emulator's OpenAPI document: FastAPI's, completed with what FastAPI cannot see.

FastAPI documents the answers a route declares. The answers of the layers around the
routes (authentication 401/403, the body limit 413, the JSON guard 422, a body the
framework cannot read 400) are added here to every operation they can come from, and
the security requirements say what the server really accepts: an API key or a bearer
token, each optionally with X-Tenant-Id, never X-Tenant-Id alone. The document must
validate as OpenAPI 3.1 (tests/integration/test_controlplane_openapi.py).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi

from deployplane.emulator.web.auth import SECURITY_SCHEMES

__all__ = ["BODY_METHODS", "openapi_for"]

BODY_METHODS = ("post", "put", "patch")

# {"detail": "..."}: every error answer that is not an HTTPValidationError.
_ERROR_SCHEMA = {
    "title": "ErrorDetail",
    "type": "object",
    "properties": {"detail": {"type": "string", "title": "Detail"}},
    "required": ["detail"],
}
_ERROR = {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorDetail"}}}
_VALIDATION = {"application/json": {"schema": {"$ref": "#/components/schemas/HTTPValidationError"}}}

_EVERY_OPERATION: dict[str, dict[str, Any]] = {
    "401": {"description": "Missing or invalid API key or bearer token.", "content": _ERROR},
    "403": {
        "description": "X-Tenant-Id names a workspace the credential does not belong to.",
        "content": _ERROR,
    },
    "413": {"description": "Request body over the size limit (1 MiB).", "content": _ERROR},
    "422": {"description": "Validation Error", "content": _VALIDATION},
}
_BODY_OPERATIONS: dict[str, dict[str, Any]] = {
    "400": {
        "description": "The body cannot be read, or names what does not exist (a repo_url "
        "that is not a repository of its integration).",
        "content": _ERROR,
    },
}

# Each credential alone, or with X-Tenant-Id to choose among its workspaces.
_SECURITY: list[dict[str, list[str]]] = [
    {"ApiKey": []},
    {"ApiKey": [], "TenantId": []},
    {"BearerAuth": []},
    {"BearerAuth": [], "TenantId": []},
]


def _complete(document: dict[str, Any]) -> dict[str, Any]:
    components = document.setdefault("components", {})
    components["securitySchemes"] = SECURITY_SCHEMES
    components.setdefault("schemas", {})["ErrorDetail"] = _ERROR_SCHEMA
    for operations in document["paths"].values():
        for method, operation in operations.items():
            operation["security"] = _SECURITY
            responses = operation.setdefault("responses", {})
            extra = dict(_EVERY_OPERATION)
            if method in BODY_METHODS:
                extra |= _BODY_OPERATIONS
            for code, response in extra.items():
                responses.setdefault(code, response)
    return document


def openapi_for(app: FastAPI) -> Callable[[], dict[str, Any]]:
    """`app.openapi`: generated once, then served from memory."""

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            document = get_openapi(title=app.title, version=app.version, routes=app.routes)
            app.openapi_schema = _complete(document)
        return app.openapi_schema

    return openapi
