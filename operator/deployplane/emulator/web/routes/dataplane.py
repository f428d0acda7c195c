"""The data-plane extension: the calls a listener agent makes besides the published ones.

The service keeps its data-plane protocol private, so this is ours, under a prefix no
published path uses (`/_dataplane/v1`), authenticated like every call (X-Api-Key or a
bearer token, plus X-Tenant-Id) and scoped to one listener's own deployments: another
workspace's ids are 404, a deployment of another listener is 403. Not served in strict
mode. Documented in docs/dataplane.md and docs/emulator.md.
"""

from __future__ import annotations

import time
import uuid
from typing import Annotated, TypedDict

from fastapi import APIRouter, Depends, status
from fastapi.responses import Response

from deployplane.api.dataplane import Heartbeat, RevisionReport, RevisionWork, RouteReport
from deployplane.api.models import NotFoundBody
from deployplane.emulator.store import agents, dataplane
from deployplane.emulator.web.deps import InWorkspace, Responses

__all__ = ["PREFIX", "router"]

PREFIX = "/_dataplane/v1/listeners/{listener_id}"

# Every call answers these: each is scoped to one listener of the workspace.
_ERRORS: Responses = {
    403: {"model": NotFoundBody, "description": "The deployment runs on another listener."},
    404: {"model": NotFoundBody, "description": "Not found in this workspace."},
}

router = APIRouter(prefix=PREFIX, tags=["data plane (extension)"], responses=_ERRORS)

_CONFLICT: Responses = {
    409: {"model": NotFoundBody, "description": "Not in a state the call applies to."},
}


class _RevisionIds(TypedDict):
    """The ids in the path of a revision call, as the `dataplane` functions take them."""

    listener_id: uuid.UUID
    deployment_id: uuid.UUID
    revision_id: uuid.UUID


def _revision_path(
    listener_id: uuid.UUID, deployment_id: uuid.UUID, revision_id: uuid.UUID
) -> _RevisionIds:
    return {"listener_id": listener_id, "deployment_id": deployment_id, "revision_id": revision_id}


RevisionPath = Annotated[_RevisionIds, Depends(_revision_path)]


@router.put(
    "/heartbeat",
    response_model=Heartbeat,
    summary="The listener's agent is alive",
)
async def heartbeat(listener_id: uuid.UUID, call: InWorkspace) -> Response:
    return await call.write(agents.heartbeat, listener_id=listener_id, now=time.time())


@router.get(
    "/deployments/{deployment_id}/revisions/{revision_id}",
    response_model=RevisionWork,
    summary="What to run for a revision (its image) and the last report on it",
)
async def revision_work(revision: RevisionPath, call: InWorkspace) -> Response:
    return await call.read(dataplane.revision_work, **revision)


@router.put(
    "/deployments/{deployment_id}/revisions/{revision_id}/status",
    response_model=RevisionWork,
    responses=_CONFLICT,
    summary="Report a revision's rollout: DEPLOYING, DEPLOYED or DEPLOY_FAILED",
)
async def report_revision(
    revision: RevisionPath, body: RevisionReport, call: InWorkspace
) -> Response:
    return await call.write(dataplane.report_revision, **revision, report=body)


@router.post(
    "/deployments/{deployment_id}/deleted",
    status_code=status.HTTP_204_NO_CONTENT,
    responses=_CONFLICT,
    summary="The deployment's objects are gone from the cluster: remove the record",
)
async def deletion_done(
    listener_id: uuid.UUID, deployment_id: uuid.UUID, call: InWorkspace
) -> Response:
    return await call.write_no_content(
        dataplane.deletion_done, listener_id=listener_id, deployment_id=deployment_id
    )


@router.put(
    "/deployments/{deployment_id}/url",
    status_code=status.HTTP_204_NO_CONTENT,
    summary="The URL the deployment's route exposes: its source_config.custom_url",
)
async def report_url(
    listener_id: uuid.UUID, deployment_id: uuid.UUID, body: RouteReport, call: InWorkspace
) -> Response:
    return await call.write_no_content(
        dataplane.report_url, listener_id=listener_id, deployment_id=deployment_id, url=body.url
    )
