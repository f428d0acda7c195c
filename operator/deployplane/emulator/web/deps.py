"""What the route modules share: request state, query-parameter checks, and the
answer helpers that run a storage function on a connection and answer its result (so
every route reads, writes and serialises the same way: a write's answer is serialised
inside its transaction)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Hashable
from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import Depends, Query, Request
from fastapi.responses import Response
from pydantic import BaseModel

from deployplane.emulator.errors import InvalidError, invalid
from deployplane.emulator.revisions.pipeline import Pipeline
from deployplane.emulator.rules.validation import NUL_MESSAGE
from deployplane.emulator.settings import WorkspaceConfig
from deployplane.emulator.store.db import Database
from deployplane.emulator.web.auth import current_workspace
from deployplane.emulator.web.cache import ReadCache

__all__ = [
    "InWorkspace",
    "Limit",
    "Offset",
    "Responses",
    "WorkspaceCall",
    "cached_answer",
    "database_of",
    "extension_param",
    "json_bytes_response",
    "json_response",
    "pipeline_of",
    "read_answer",
    "read_cache_of",
    "refuse_nul_in_query",
    "write_answer",
    "write_no_content",
    "write_result",
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


def refuse_nul_in_query(**params: object) -> None:
    """422 when a text query parameter holds U+0000 (no stored string can); parameters
    that are not text are passed over."""
    errors = [
        invalid(("query", name), NUL_MESSAGE)
        for name, value in params.items()
        if isinstance(value, str) and "\x00" in value
    ]
    if errors:
        raise InvalidError(errors)


Limit = Annotated[int, Query(ge=1, le=100, description="Page size.")]
# Bounded: SQLite integers are 64-bit, and no page starts beyond a billion items.
# No maximum, as published: a page past the last item is empty (`store.rows.sql_offset`).
Offset = Annotated[int, Query(ge=0, description="Index of the first item.")]


def json_bytes_response(body: bytes, status_code: int = 200) -> Response:
    return Response(content=body, status_code=status_code, media_type="application/json")


def json_response(model: BaseModel, status_code: int = 200) -> Response:
    """Serialises once with pydantic-core; the route's response_model documents it."""
    return Response(
        content=model.model_dump_json(), status_code=status_code, media_type="application/json"
    )


Responses = dict[int | str, dict[str, Any]]
"""Extra documented answers of a route (FastAPI's `responses=`)."""


Operation = Callable[..., Awaitable[Any]]
"""A storage function (`store`, `agents`, `dataplane`): keyword arguments, `conn` among
them."""


async def read_answer(request: Request, operation: Operation, **arguments: Any) -> Response:
    """200 with the model `operation` reads on a read connection."""
    async with database_of(request).read() as conn:
        model = await operation(conn=conn, **arguments)
    return json_response(model)


async def cached_answer(
    request: Request, key: Hashable, operation: Operation, **arguments: Any
) -> Response:
    """As `read_answer`, served from the read cache while nothing was written since."""
    cache = read_cache_of(request)
    body = cache.get(key)
    if body is None:
        generation = cache.generation  # before the read: a write meanwhile voids it
        async with database_of(request).read() as conn:
            model = await operation(conn=conn, **arguments)
        body = model.model_dump_json().encode()
        cache.put(key, generation, body)
    return json_bytes_response(body)


async def write_answer(
    request: Request, operation: Operation, status_code: int = 200, **arguments: Any
) -> Response:
    """The model `operation` writes in one transaction, serialised before the commit:
    an answer that cannot be written rolls the write back."""
    async with database_of(request).write() as conn:
        model = await operation(conn=conn, **arguments)
        return json_response(model, status_code)


async def write_result(request: Request, operation: Operation, **arguments: Any) -> Any:
    """What `operation` returns, once its transaction is committed."""
    async with database_of(request).write() as conn:
        return await operation(conn=conn, **arguments)


async def write_no_content(request: Request, operation: Operation, **arguments: Any) -> Response:
    """204 once `operation` (which answers nothing) is committed."""
    await write_result(request, operation, **arguments)
    return Response(status_code=204)


@dataclass(frozen=True, slots=True)
class WorkspaceCall:
    """A request and the workspace it acts in: the answer helpers above, each given the
    request and `workspace=` so that a route names only what is its own."""

    request: Request
    workspace: WorkspaceConfig

    async def read(self, operation: Operation, **arguments: Any) -> Response:
        return await read_answer(self.request, operation, workspace=self.workspace, **arguments)

    async def cached(self, key: Hashable, operation: Operation, **arguments: Any) -> Response:
        return await cached_answer(
            self.request, key, operation, workspace=self.workspace, **arguments
        )

    async def write(
        self, operation: Operation, status_code: int = 200, **arguments: Any
    ) -> Response:
        return await write_answer(
            self.request, operation, status_code, workspace=self.workspace, **arguments
        )

    async def write_result(self, operation: Operation, **arguments: Any) -> Any:
        return await write_result(self.request, operation, workspace=self.workspace, **arguments)

    async def write_no_content(self, operation: Operation, **arguments: Any) -> Response:
        return await write_no_content(
            self.request, operation, workspace=self.workspace, **arguments
        )


async def workspace_call(request: Request) -> WorkspaceCall:
    # `current_workspace` called, not depended on: one dependency per request, as a
    # route taking `CurrentWorkspace` and `Request` had (see `database_of`).
    return WorkspaceCall(request, await current_workspace(request))


InWorkspace = Annotated[WorkspaceCall, Depends(workspace_call)]
"""A route's request with its workspace (401/403 as `auth.current_workspace`)."""
