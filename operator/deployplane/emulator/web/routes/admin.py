"""The emulator's own endpoints: health, runtime faults, request statistics.

`/_emulator/*` is left out of the OpenAPI document: it is not part of the API being
emulated, and schema-driven tests must not switch faults on. It acts for every tenant
at once, so it takes the emulator's admin credential (`auth.require_admin`), never a
workspace's, and strict mode does not register it (`app.py`).
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field
from sqlalchemy import text

from deployplane.emulator.settings import MAX_LATENCY_MS
from deployplane.emulator.web.auth import require_admin
from deployplane.emulator.web.deps import database_of
from deployplane.emulator.web.middleware import FaultState, RequestStats

__all__ = ["FaultsUpdate", "health_router", "router"]

health_router = APIRouter()
router = APIRouter(
    prefix="/_emulator",
    include_in_schema=False,
    dependencies=[Depends(require_admin)],
)


@health_router.get("/healthz", include_in_schema=False)
async def healthz() -> dict[str, str]:
    """Liveness: the server answers (its event loop turns); nothing else is asked."""
    return {"status": "ok"}


@health_router.get("/readyz", include_in_schema=False, response_model=None)
async def readyz(request: Request) -> dict[str, str] | JSONResponse:
    """Readiness: the database answers a statement as well, so an emulator whose
    database is away is taken out of its Service and not restarted."""
    try:
        async with database_of(request).read() as conn:
            await conn.execute(text("SELECT 1"))
    except Exception as exc:  # any failure of the database means: not ready
        reason = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        return JSONResponse({"status": "unready", "database": reason}, status_code=503)
    return {"status": "ok"}


class FaultsUpdate(BaseModel):
    """Body of PUT /_emulator/faults; fields left out keep their value."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    error_rate: Annotated[float, Field(ge=0, le=1)] | None = None
    latency_ms: Annotated[float, Field(ge=0, le=MAX_LATENCY_MS)] | None = None


def _faults(request: Request) -> FaultState:
    faults: FaultState = request.app.state.faults
    return faults


def _faults_json(faults: FaultState) -> dict[str, float]:
    return {"error_rate": faults.error_rate, "latency_ms": faults.latency_ms}


@router.get("/faults")
async def get_faults(request: Request) -> dict[str, float]:
    return _faults_json(_faults(request))


@router.put("/faults")
async def put_faults(body: FaultsUpdate, request: Request) -> dict[str, float]:
    faults = _faults(request)
    if body.error_rate is not None:
        faults.error_rate = body.error_rate
    if body.latency_ms is not None:
        faults.latency_ms = body.latency_ms
    return _faults_json(faults)


@router.get("/stats")
async def get_stats(request: Request) -> dict[str, Any]:
    stats: RequestStats = request.app.state.stats
    # plus the requests now in their injected delay (not yet answered, so not counted)
    return {**stats.as_json(), "in_delay": _faults(request).waiting}


@router.delete("/stats", status_code=204)
async def reset_stats(request: Request) -> None:
    stats: RequestStats = request.app.state.stats
    stats.counts.clear()
