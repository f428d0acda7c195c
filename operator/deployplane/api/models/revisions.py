"""Revisions: the states a revision passes through and the source config that makes one."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated
from uuid import UUID

from pydantic import Field

from deployplane.api.enums import RevisionStatus
from deployplane.api.models.common import ApiModel, ReportedSource, or_unknown

ReportedRevisionStatus = Annotated[RevisionStatus, or_unknown(RevisionStatus)]


class ManagedRevisionConfig(ApiModel):
    """The source fields whose change creates a new revision that the operator manages
    (an AgentDeployment's `spec.sourceRevisionConfig`)."""

    repo_ref: str | None = Field(
        None,
        description="Git ref: a branch by bare name, a tag as refs/tags/<tag>. git_host only.",
    )
    graph_config_path: str | None = Field(
        None, description="Path of the graph configuration file. git_host only."
    )
    image_uri: str | None = Field(
        None,
        description=(
            "Container image URI: external_docker, internal_docker (the pushed image); set "
            "by the service once an internal_source revision is built."
        ),
    )


class SourceRevisionConfig(ManagedRevisionConfig):
    """Source fields whose change creates a new revision.

    The two build fields are what the vendor's CLI sends for a remote build
    (`langgraph deploy --remote`): the `object_path` of an upload and the path of the
    project's config file inside it."""

    source_tarball_path: str | None = Field(
        None,
        description="object_path of an uploaded source tarball (upload-url). internal_source.",
    )
    langgraph_config_path: str | None = Field(
        None, description="Path of langgraph.json inside the tarball. internal_source."
    )


class SourceRevisionConfigStatus(SourceRevisionConfig):
    """SourceRevisionConfig as the service reports it, with the built commit."""

    repo_commit_sha: str | None = Field(None, description="Commit built (read-only).")


class Revision(ApiModel):
    """A revision of a deployment."""

    id: UUID
    created_at: datetime
    updated_at: datetime
    status: ReportedRevisionStatus
    source: ReportedSource
    source_revision_config: SourceRevisionConfigStatus
