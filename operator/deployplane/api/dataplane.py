"""The data-plane extension's messages (docs/dataplane.md), shared by the emulator that
serves the extension and the listener agent that calls it.

Not part of the published contract: the service keeps its data-plane protocol private.
"""

from __future__ import annotations

import uuid
from enum import StrEnum

from pydantic import Field

from deployplane.api.models import ApiModel, Deployment, Listener, RevisionStatus

__all__ = [
    "LABEL_DEPLOYMENT_ID",
    "LABEL_LISTENER_ID",
    "Heartbeat",
    "NoNamespace",
    "ReportedDeploymentStatus",
    "ReportedStatus",
    "RevisionReport",
    "RevisionWork",
    "RouteReport",
    "ServerRuntime",
    "namespace_for",
]

LABEL_DEPLOYMENT_ID = "deployplane.io/deployment-id"
"""On every object an agent makes for a deployment: the deployment's id."""
LABEL_LISTENER_ID = "deployplane.io/listener-id"
"""On every object an agent makes: the id of the listener it runs for."""


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


class NoNamespace(ValueError):
    """A deployment has no namespace of its listener to run in; one sentence, never a
    value."""


def namespace_for(deployment: Deployment, listener: Listener) -> str:
    """The namespace of the listener's cluster a deployment's objects live in:
    `listener_config.k8s_namespace`, which must be one of the listener's namespaces.

    Unset, it is the listener's first namespace: the agent's Roles exist only in the
    listener's namespaces, so no other default could ever be deployed to.
    """
    compute_config = listener.compute_config
    allowed = list((compute_config.k8s_namespaces if compute_config else None) or [])
    listener_config = deployment.source_config.listener_config if deployment.source_config else None
    wanted = listener_config.k8s_namespace if listener_config else None
    if not allowed:
        raise NoNamespace(f"listener {listener.id} has no k8s_namespaces to deploy into")
    if wanted is None:
        return allowed[0]
    if wanted not in allowed:
        raise NoNamespace(
            f"namespace {wanted} is not one of listener {listener.id}'s namespaces: "
            + ", ".join(allowed)
        )
    return wanted
