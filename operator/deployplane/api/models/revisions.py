"""Revisions: the states a revision passes through and the source config that makes one."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Annotated
from uuid import UUID

from pydantic import Field

from deployplane.api.models.common import ApiModel, ReportedSource, or_unknown


class RevisionStatus(StrEnum):
    """Every revision state named by the spec."""

    CREATING = "CREATING"
    QUEUED = "QUEUED"
    AWAITING_BUILD = "AWAITING_BUILD"
    BUILDING = "BUILDING"
    AWAITING_DEPLOY = "AWAITING_DEPLOY"
    DEPLOYING = "DEPLOYING"
    CREATE_FAILED = "CREATE_FAILED"
    BUILD_FAILED = "BUILD_FAILED"
    DEPLOY_FAILED = "DEPLOY_FAILED"
    DEPLOYED = "DEPLOYED"
    SKIPPED = "SKIPPED"
    INTERRUPTED = "INTERRUPTED"
    UNKNOWN = "UNKNOWN"

    @property
    def is_terminal(self) -> bool:
        return self in TERMINAL_REVISION_STATUSES

    @property
    def is_failure(self) -> bool:
        return self in _FAILED_REVISION_STATUSES


TERMINAL_REVISION_STATUSES: frozenset[RevisionStatus] = frozenset(
    {
        RevisionStatus.DEPLOYED,
        RevisionStatus.CREATE_FAILED,
        RevisionStatus.BUILD_FAILED,
        RevisionStatus.DEPLOY_FAILED,
        RevisionStatus.SKIPPED,
        RevisionStatus.INTERRUPTED,
    }
)
_FAILED_REVISION_STATUSES: frozenset[RevisionStatus] = frozenset(
    {RevisionStatus.CREATE_FAILED, RevisionStatus.BUILD_FAILED, RevisionStatus.DEPLOY_FAILED}
)


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
