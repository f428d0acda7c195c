"""Emulator extensions: operations the real service does not publish.

Served only outside strict mode (`app.py`), and never in the OpenAPI document, which
shows the published contract. Each one is listed in docs/emulator.md. deployplane's
client, operator and CLI use none of them.
"""

from __future__ import annotations

import uuid

from fastapi import APIRouter, Request
from fastapi.responses import Response

from deployplane.api.models import Listener, ListenerPut
from deployplane.emulator import store
from deployplane.emulator.web.auth import CurrentWorkspace
from deployplane.emulator.web.deps import write_answer

__all__ = ["router"]

router = APIRouter(include_in_schema=False)


@router.put(
    "/v2/listeners/{listener_id}",
    response_model=Listener,
    summary="Replace a listener (compute_type and compute_id must match)",
)
async def put_listener(
    listener_id: uuid.UUID, body: ListenerPut, workspace: CurrentWorkspace, request: Request
) -> Response:
    return await write_answer(
        request, store.put_listener, workspace=workspace, listener_id=listener_id, body=body
    )
