"""Request-scoped dependencies shared by the route modules."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Query, Request
from fastapi.responses import Response
from pydantic import BaseModel

from deployplane.controlplane.cache import ReadCache
from deployplane.controlplane.db import Database
from deployplane.controlplane.errors import InvalidError, invalid
from deployplane.controlplane.pipeline import Pipeline
from deployplane.controlplane.validation import NUL_MESSAGE, nul_errors

__all__ = [
    "Limit",
    "Offset",
    "Responses",
    "database_of",
    "extension_param",
    "json_bytes_response",
    "json_response",
    "pipeline_of",
    "read_cache_of",
    "refuse_nul_in_body",
    "refuse_nul_in_query",
]


# Plain functions of the request rather than FastAPI dependencies: resolving a
# dependency costs more per request than the attribute read it wraps (see the
# benchmark); routes take `request: Request`, which FastAPI passes for free.
def database_of(request: Request) -> Database:
    db: Database = request.app.state.db
    return db


def read_cache_of(request: Request) -> ReadCache:
    cache: ReadCache = request.app.state.read_cache
    return cache


def pipeline_of(request: Request) -> Pipeline:
    pipeline: Pipeline = request.app.state.pipeline
    return pipeline


def extension_param(request: Request, name: str) -> str | None:
    """A query parameter of an emulator extension (docs/emulator.md): read from the raw
    query, so it stays out of the OpenAPI document, and ignored in strict mode, as the
    service ignores a query parameter it does not know."""
    if request.app.state.strict:
        return None
    return request.query_params.get(name)


async def refuse_nul_in_body(request: Request, body: BaseModel) -> None:
    """422 when a string of the parsed body holds U+0000 (see `validation.nul_errors`).

    JSON carries U+0000 only as the escape \\u0000, and a body in UTF-16 or UTF-32 is
    full of zero bytes: two byte scans of the (already read) body clear nearly every
    request, and only a suspect one is walked, by the fields it was parsed into (so an
    escaped backslash followed by u0000, or an ignored unknown field, is no error).
    """
    raw = await request.body()
    if b"\\u0000" in raw or b"\x00" in raw:
        errors = nul_errors(body.model_dump(), ("body",))
        if errors:
            raise InvalidError(errors)


def refuse_nul_in_query(**params: str | None) -> None:
    """422 when a text query parameter holds U+0000 (no stored string can)."""
    errors = [
        invalid(("query", name), NUL_MESSAGE)
        for name, value in params.items()
        if value is not None and "\x00" in value
    ]
    if errors:
        raise InvalidError(errors)


Limit = Annotated[int, Query(ge=1, le=100, description="Page size.")]
# Bounded: SQLite integers are 64-bit, and no page starts beyond a billion items.
Offset = Annotated[int, Query(ge=0, le=1_000_000_000, description="Index of the first item.")]


def json_bytes_response(body: bytes, status_code: int = 200) -> Response:
    return Response(content=body, status_code=status_code, media_type="application/json")


def json_response(model: BaseModel, status_code: int = 200) -> Response:
    """Serialises once with pydantic-core; the route's response_model documents it."""
    return Response(
        content=model.model_dump_json(), status_code=status_code, media_type="application/json"
    )


Responses = dict[int | str, dict[str, Any]]
"""Extra documented answers of a route (FastAPI's `responses=`)."""
