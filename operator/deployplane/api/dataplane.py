"""The data-plane extension's messages (docs/dataplane.md), shared by the emulator that
serves the extension and the listener agent that calls it.

Not part of the published contract: the service keeps its data-plane protocol private.
"""

from __future__ import annotations

import uuid
from enum import StrEnum

from pydantic import Field

from deployplane.api.dataplane import ServerRuntime
from deployplane.api.models import (
    ApiModel,
    RevisionStatus,
)

__all__ = [
    "Heartbeat",
    "ReportedDeploymentStatus",
    "ReportedStatus",
    "RevisionReport",
    "RevisionWork",
    "RouteReport",
    "ServerRuntime",
]


class Heartbeat(ApiModel):
    """Answer of a heartbeat: how long the agent counts as alive."""

    listener_id: uuid.UUID
    ttl_seconds: float


class ReportedStatus(StrEnum):
    """What an agent may say about a revision's rollout."""

    DEPLOYING = "DEPLOYING"
    DEPLOYED = "DEPLOYED"
    DEPLOY_FAILED = "DEPLOY_FAILED"


class ReportedDeploymentStatus(StrEnum):
    """What an agent may say about the deployment: is its database ready?"""

    AWAITING_DATABASE = "AWAITING_DATABASE"
    READY = "READY"


class ReportLine(ApiModel):
    """A line of the rollout an agent saw (an event, a pod's state): a deploy log line."""

    level: str = Field("INFO", pattern="^(DEBUG|INFO|WARNING|ERROR|CRITICAL)$")
    message: str = Field(min_length=1, max_length=2000)


class RevisionReport(ApiModel):
    """An agent's report on one revision."""

    status: ReportedStatus
    message: str | None = Field(None, max_length=2000, description="Why, for a failure.")
    deployment_status: ReportedDeploymentStatus | None = None
    # what the agent saw of the rollout, shipped as deploy log lines (never secrets)
    log_lines: list[ReportLine] = Field(default_factory=list, max_length=50)


class ServerRuntime(StrEnum):
    """Which server the revision's image runs, so the agent renders what it needs.

    `postgres`: the vendor's production server (queue workers, PostgreSQL, Redis),
    what an image of `langgraph build` runs and the default for any image the control
    plane did not build. `inmem`: `langgraph-runtime-inmem`, the server of
    `langgraph dev` (runs and threads in the server's memory): one server pod, nothing
    beside it. The emulator's remote build (internal_source) makes `inmem` images.
    """

    POSTGRES = "postgres"
    INMEM = "inmem"


class RevisionWork(ApiModel):
    """What an agent needs beyond the published Revision: the image to run."""

    revision_id: uuid.UUID
    status: RevisionStatus
    image_uri: str | None
    message: str | None = None
    # Which server the image runs; an answer without it means the vendor's (postgres).
    runtime: ServerRuntime = ServerRuntime.POSTGRES
    # The values of the deployment's secrets, which the published API never returns.
    secret_values: dict[str, str] = Field(default_factory=dict, repr=False)


class RouteReport(ApiModel):
    """The URL a deployment's route exposes (an Ingress or HTTPRoute the agent made):
    the control plane shows it as the deployment's `source_config.custom_url`."""

    # a host, then an optional path; no whitespace (it is shown as is by every client)
    url: str = Field(..., min_length=1, max_length=4096, pattern=r"^https?://[^\s/?#]+(/\S*)?$")


LABEL_DEPLOYMENT_ID = "deployplane.io/deployment-id"


LABEL_LISTENER_ID = "deployplane.io/listener-id"
