"""How a deployment's code reaches the service from the vendor's CLI: a source tarball
PUT to a signed upload URL (internal_source, which the service then builds), or an
image pushed with a push token (internal_docker).

An upload URL is signed (HMAC of the object path, the expiry and the content type with
the emulator's server-side key), expires, and is single-use: its row is made here
with the URL and filled once by the PUT (`emulator/uploads.py` checks the body).
No registry runs here: a push token is minted and never checked, so a push goes
nowhere; the image reference the CLI then PATCHes is taken as given.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import time
import uuid
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import select, update

from deployplane.api.models import DeploymentStatus, PushToken, Source, UploadUrl
from deployplane.emulator.errors import RefusedError, invalid
from deployplane.emulator.settings import WorkspaceConfig
from deployplane.emulator.store.db import DbConn
from deployplane.emulator.store.rows import deployment_not_found, first_or_404, owned
from deployplane.emulator.store.tables import deployments, uploads

__all__ = [
    "REGISTRY_HOST",
    "UPLOAD_CONTENT_TYPE",
    "UPLOAD_PREFIX",
    "StoredUpload",
    "create_upload_url",
    "fill_upload",
    "find_upload",
    "push_token",
    "sign",
    "unknown_upload",
    "upload_data",
    "upload_ready",
]

UPLOAD_PREFIX = "/_uploads/"
UPLOAD_CONTENT_TYPE = "application/gzip"
# A header the client sends back with the PUT: the size range the PUT may have (the
# same idea as Cloud Storage's X-Goog-Content-Length-Range). Not signed: the PUT
# enforces the limit itself (`routes/uploads.py`).
RANGE_HEADER = "X-Deployplane-Content-Length-Range"
REGISTRY_HOST = "registry.deployplane.example"


def sign(key: bytes, object_path: str, expires: int, content_type: str) -> str:
    message = f"upload\0{object_path}\0{expires}\0{content_type}".encode()
    return hmac.new(key, message, hashlib.sha256).hexdigest()


async def _deployment(conn: DbConn, workspace: WorkspaceConfig, deployment_id: uuid.UUID) -> Any:
    query = select(deployments.c.source, deployments.c.status, deployments.c.name).where(
        *owned(deployments, deployment_id, workspace.id)
    )
    row = await first_or_404(conn, query, deployment_not_found, deployment_id)
    if row.status == DeploymentStatus.AWAITING_DELETE.value:
        raise RefusedError(f"Deployment ID {deployment_id} is being deleted.")
    return row


async def create_upload_url(
    *,
    conn: DbConn,
    workspace: WorkspaceConfig,
    deployment_id: uuid.UUID,
    base_url: str,
    url_seconds: float,
    max_bytes: int,
) -> UploadUrl:
    """A signed URL for one upload of an internal_source deployment's tarball."""
    row = await _deployment(conn, workspace, deployment_id)
    if row.source != Source.INTERNAL_SOURCE.value:
        # As the push token's refusal the vendor's CLI quotes (deploy.py), by analogy.
        raise RefusedError("Upload URL is only available for 'internal_source' source deployments.")
    object_path = f"sources/{deployment_id}/{uuid.uuid4().hex}.tar.gz"
    expires = int(time.time() + url_seconds)
    await conn.execute(
        uploads.insert().values(
            object_path=object_path,
            workspace_id=workspace.id,
            deployment_id=deployment_id,
            expires_at=float(expires),
            used=False,
        )
    )
    signature = sign(conn.secret_key, object_path, expires, UPLOAD_CONTENT_TYPE)
    return UploadUrl(
        upload_url=(
            f"{base_url.rstrip('/')}{UPLOAD_PREFIX}{object_path}"
            f"?expires={expires}&signature={signature}"
        ),
        object_path=object_path,
        upload_headers={
            "Content-Type": UPLOAD_CONTENT_TYPE,
            RANGE_HEADER: f"0,{max_bytes}",
        },
        expires_at=datetime.fromtimestamp(expires, UTC),
    )


class StoredUpload:
    """An upload row as the PUT needs it."""

    def __init__(self, row: Any) -> None:
        self.object_path: str = row.object_path
        self.expires_at: float = row.expires_at
        self.used: bool = row.used


async def find_upload(conn: DbConn, object_path: str) -> StoredUpload | None:
    row = (
        await conn.execute(
            select(uploads.c.object_path, uploads.c.expires_at, uploads.c.used).where(
                uploads.c.object_path == object_path
            )
        )
    ).first()
    return None if row is None else StoredUpload(row)


async def fill_upload(conn: DbConn, object_path: str, data: bytes | bytearray, digest: str) -> bool:
    """Stores the body of the URL's one use; False when it was used already (a replay,
    or a concurrent PUT that got there first: the conditional update decides)."""
    result = await conn.execute(
        update(uploads)
        .where(uploads.c.object_path == object_path, uploads.c.used.is_(False))
        .values(used=True, data=data, size=len(data), digest=digest)
    )
    return bool(result.rowcount)


async def upload_ready(conn: DbConn, deployment_id: uuid.UUID, object_path: str) -> bool:
    """Whether `object_path` is a filled upload of `deployment_id`."""
    row = (
        await conn.execute(
            select(uploads.c.object_path).where(
                uploads.c.object_path == object_path,
                uploads.c.deployment_id == deployment_id,
                uploads.c.used.is_(True),
            )
        )
    ).first()
    return row is not None


async def upload_data(conn: DbConn, object_path: str) -> tuple[bytes, str] | None:
    """The tarball and its sha256 digest, for the build."""
    row = (
        await conn.execute(
            select(uploads.c.data, uploads.c.digest).where(
                uploads.c.object_path == object_path, uploads.c.used.is_(True)
            )
        )
    ).first()
    if row is None or row.data is None:
        return None
    return bytes(row.data), str(row.digest)


def unknown_upload() -> dict[str, Any]:
    return invalid(
        ("body", "source_revision_config", "source_tarball_path"),
        "not an upload of this deployment (POST upload-url, then PUT the tarball there)",
    )


async def push_token(
    *, conn: DbConn, workspace: WorkspaceConfig, deployment_id: uuid.UUID
) -> PushToken:
    """Registry credentials for an internal_docker deployment's image. The registry is
    not run here: nothing checks the token, and nothing pushed is kept."""
    row = await _deployment(conn, workspace, deployment_id)
    if row.source != Source.INTERNAL_DOCKER.value:
        # The refusal the vendor's CLI recognises (langgraph_cli/deploy.py).
        raise RefusedError("Push token is only available for 'internal_docker' source deployments.")
    return PushToken(
        registry_url=f"https://{REGISTRY_HOST}",
        token=secrets.token_urlsafe(32),
        username="deployplane",
        repository_url=f"{REGISTRY_HOST}/{workspace.id}/{row.name}",
        expires_at=datetime.fromtimestamp(time.time() + 3600, UTC),
    )
