"""Request-scoped dependencies shared by the route modules."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Query, Request
from fastapi.responses import Response
from pydantic import BaseModel

from deployplane.controlplane.cache import ReadCache
from deployplane.controlplane.db import Database
from deployplane.controlplane.pipeline import Pipeline

__all__ = [
    "Limit",
    "Offset",
    "Responses",
    "database_of",
    "json_bytes_response",
    "json_response",
    "pipeline_of",
    "read_cache_of",
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
