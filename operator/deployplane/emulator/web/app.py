"""The app factory: `create_app(settings) -> FastAPI`.

Everything stateful (engine, pipeline worker, fault switches, counters) hangs off
`app.state` and is created per app, so tests can build many apps side by side.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from datetime import UTC, datetime

from fastapi import FastAPI, Request
from fastapi.exception_handlers import http_exception_handler
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from starlette.exceptions import HTTPException
from starlette.routing import Match

from deployplane.emulator.builds.imagebuild.service import ImageBuilder
from deployplane.emulator.errors import (
    ConflictError,
    DetailError,
    ForbiddenError,
    InvalidError,
    NotFoundError,
    RefusedError,
    StoreError,
)
from deployplane.emulator.revisions.pipeline import Pipeline
from deployplane.emulator.settings import Settings
from deployplane.emulator.store.db import Database
from deployplane.emulator.web.auth import AdminAuthenticator, Authenticator
from deployplane.emulator.web.cache import ReadCache
from deployplane.emulator.web.middleware import (
    BodyLimitMiddleware,
    FaultMiddleware,
    FaultState,
    JsonGuardMiddleware,
    RequestStats,
    StatsMiddleware,
)
from deployplane.emulator.web.openapi import openapi_for
from deployplane.emulator.web.routes import (
    admin,
    builds,
    dataplane,
    deployments,
    extensions,
    listeners,
    lookups,
    uploads,
)

__all__ = ["create_app"]

log = logging.getLogger(__name__)


# The HTTP answer of each storage error: the one place they are mapped.
_STATUS_OF: dict[type[StoreError], int] = {
    NotFoundError: 404,
    ForbiddenError: 403,
    ConflictError: 409,
    RefusedError: 400,
    InvalidError: 422,
}


async def _store_error(_: Request, exc: Exception) -> JSONResponse:
    """`{"detail": [errors]}` for a 422, as HTTPValidationError; else the sentence."""
    if isinstance(exc, InvalidError):
        return JSONResponse({"detail": exc.errors}, status_code=422)
    assert isinstance(exc, DetailError)
    return JSONResponse({"detail": exc.detail}, status_code=_STATUS_OF[type(exc)])


async def _request_invalid(_: Request, exc: Exception) -> JSONResponse:
    # Only loc, msg and type, as the spec's HTTPValidationError: the framework's
    # default also echoes the offending `input`, which may be a secret value.
    assert isinstance(exc, RequestValidationError)
    detail = [
        {"loc": list(error["loc"]), "msg": str(error["msg"]), "type": str(error["type"])}
        for error in exc.errors()
    ]
    return JSONResponse({"detail": detail}, status_code=422)


_METHODS = ("DELETE", "GET", "PATCH", "POST", "PUT")


async def _http_error(request: Request, exc: Exception) -> Response:
    """FastAPI's answer to an HTTPException, except that a 405's `Allow` names every
    method the path serves (RFC 9110): Starlette names those of the first route whose
    path matched, and each operation is a route of its own."""
    assert isinstance(exc, HTTPException)
    if exc.status_code == 405:
        routes = request.app.router.routes
        allow = [
            method
            for method in _METHODS
            if any(r.matches({**request.scope, "method": method})[0] is Match.FULL for r in routes)
        ]
        exc = HTTPException(405, exc.detail, headers={"Allow": ", ".join(allow)})
    return await http_exception_handler(request, exc)


# The service's operations: the published contract's, then what the vendor's CLI calls
# besides (part of the service, so on in strict mode too).
_SERVICE_ROUTERS = (
    deployments.router,
    deployments.one_router,
    listeners.router,
    lookups.router,
    builds.deployment_router,
    builds.logs_router,
    uploads.router,
)


def _image_builder(
    settings: Settings, db: Database, notify: Callable[[], None]
) -> ImageBuilder | None:
    """The remote builds as real images, when configured (`image_builds`); the pipeline
    starts and stops it."""
    if settings.config.image_builds is None:
        return None
    return ImageBuilder(db=db, settings=settings.config.image_builds, on_verdict=notify)


def create_app(settings: Settings) -> FastAPI:
    """A complete emulator; its lifespan creates the schema and runs the pipeline."""
    db = Database(settings.database_url)
    builder = _image_builder(settings, db, lambda: pipeline.notify())
    pipeline = Pipeline(db=db, config=settings.config.pipeline, builder=builder)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        await db.create_schema()
        await db.load_secret_key(settings.config.secret_digest_key)
        pipeline.start()
        try:
            yield
        finally:
            app.state.faults.stop()
            await pipeline.stop()
            await db.dispose()

    app = FastAPI(
        title="Deployment Control Plane (deployplane emulator)",
        version="0.1.0",
        lifespan=lifespan,
    )
    app.openapi = openapi_for(app)  # type: ignore[method-assign]
    app.state.settings = settings
    app.state.db = db
    app.state.pipeline = pipeline
    app.state.read_cache = ReadCache(db)
    app.state.authenticator = Authenticator(settings.config.workspaces)
    app.state.admin_authenticator = AdminAuthenticator(settings.config.admin_api_keys)
    app.state.faults = FaultState(
        error_rate=settings.config.faults.error_rate,
        latency_ms=settings.config.faults.latency_ms,
    )
    app.state.stats = RequestStats()
    app.state.started_at = datetime.now(UTC)

    app.state.strict = settings.strict_mode
    if not settings.strict_mode:  # strict: the published contract only, no extension
        app.include_router(admin.health_router)
        app.include_router(admin.router)
        app.include_router(extensions.router)
        # The data-plane protocol (docs/dataplane.md): the service keeps its own private.
        app.include_router(dataplane.router)
    for router in _SERVICE_ROUTERS:
        app.include_router(router)

    for error in _STATUS_OF:
        app.add_exception_handler(error, _store_error)
    app.add_exception_handler(RequestValidationError, _request_invalid)
    app.add_exception_handler(HTTPException, _http_error)

    # Added innermost first: stats sees every answer, including injected faults, 413s
    # and refused bodies; the guard reads at most the body limit.
    app.add_middleware(JsonGuardMiddleware)
    app.add_middleware(BodyLimitMiddleware, max_bytes=settings.max_body_bytes)
    app.add_middleware(FaultMiddleware, faults=app.state.faults)
    app.add_middleware(StatsMiddleware, stats=app.state.stats, routes=app.router.routes)
    return app
