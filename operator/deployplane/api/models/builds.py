"""What the vendor's own CLI (`langgraph deploy`, PyPI `langgraph-cli`) calls besides the
published contract: a signed upload URL for a source tarball, a registry push token,
and the build and deploy logs of a deployment.

The shapes follow the client's code (`langgraph_cli/host_backend.py`, `deploy.py`):
request bodies as it sends them, answers with the fields it reads. Where its code does
not show a shape (limits, the offset's form, the timestamp's unit), docs/emulator.md
says what was chosen and why.
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum

from pydantic import Field

from deployplane.api.models.common import ApiModel

__all__ = [
    "LOG_LIMIT_MAX",
    "LogEntry",
    "LogLevel",
    "LogOrder",
    "LogsPage",
    "LogsQuery",
    "PushToken",
    "PushTokenRequest",
    "UploadUrl",
    "UploadUrlRequest",
]

LOG_LIMIT_MAX = 1000


class UploadUrlRequest(ApiModel):
    """Body of POST /v2/deployments/{id}/upload-url."""

    supports_upload_headers: bool = Field(
        False, description="The client sends the answer's upload_headers with its PUT."
    )


class UploadUrl(ApiModel):
    """Where to PUT a source tarball: a signed, expiring, single-use URL."""

    upload_url: str = Field(description="Signed URL; PUT the gzip tarball there.")
    object_path: str = Field(
        description="Name of the upload: the source_tarball_path of the PATCH that builds it."
    )
    upload_headers: dict[str, str] = Field(
        default_factory=dict, description="Headers the PUT must carry (they are signed)."
    )
    expires_at: datetime | None = Field(None, description="When the URL stops working.")


class PushTokenRequest(ApiModel):
    """Body of POST /v2/deployments/{id}/push-token."""

    supports_registry_username: bool = Field(
        False, description="The client logs in with the answer's username."
    )


class PushToken(ApiModel):
    """Credentials to push an internal_docker deployment's image."""

    registry_url: str = Field(description="Registry host (and path) to push to.")
    token: str = Field(description="Password for `docker login` (write-only: never logged).")
    username: str | None = Field(None, description="User name for `docker login`.")
    repository_url: str | None = Field(
        None, description="The exact repository to push to, when the service chooses it."
    )
    expires_at: datetime | None = Field(None, description="When the token stops working.")

    def __repr__(self) -> str:  # keep the token out of logs and tracebacks
        return f"PushToken(registry_url={self.registry_url!r}, token=<redacted>)"

    __str__ = __repr__


class LogOrder(StrEnum):
    ASC = "asc"
    DESC = "desc"


class LogLevel(StrEnum):
    DEBUG = "DEBUG"
    INFO = "INFO"
    WARNING = "WARNING"
    ERROR = "ERROR"
    CRITICAL = "CRITICAL"


class LogsQuery(ApiModel):
    """Body of the build_logs and deploy_logs operations: the filters the CLI sends."""

    order: LogOrder = Field(LogOrder.DESC, description="asc: oldest first; desc: newest first.")
    limit: int = Field(100, ge=1, le=LOG_LIMIT_MAX, description="Most lines to answer.")
    offset: str | None = Field(
        None,
        max_length=32,
        description="A next_offset of an earlier answer: go on after the lines it ended with.",
    )
    query: str | None = Field(None, max_length=1000, description="Substring of the message.")
    level: LogLevel | None = Field(None, description="Only lines of this level.")
    start_time: datetime | None = Field(None, description="Lines at or after (ISO 8601).")
    end_time: datetime | None = Field(None, description="Lines before (ISO 8601).")


class LogEntry(ApiModel):
    """One log line."""

    id: str = Field(description="Stable id of the line (the CLI's -f skips ids it printed).")
    timestamp: int = Field(description="Milliseconds since the epoch (UTC).")
    level: LogLevel
    message: str


class LogsPage(ApiModel):
    """An answer of build_logs / deploy_logs."""

    logs: list[LogEntry]
    next_offset: str | None = Field(
        None,
        description=(
            "Give it as `offset` (same order) for the lines after these; null when no line "
            "was answered and no offset given."
        ),
    )
