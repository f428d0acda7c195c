"""The emulator's object storage: the signed upload URLs of `POST .../upload-url` are
served here. No credentials (the signature is the credential), not in the OpenAPI
document (it stands for the service's storage, not its API), on in strict mode.

Refused, with nothing stored: a bad signature or content type (403), an expired URL
(403), an unknown upload (404), a used one (409, the URL is single-use), a body over
the limit (413, by Content-Length or as it streams in), a body that is not a gzip
tarball (400). The body is stored with its sha256 digest, from which a build derives
the image reference.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import time

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response

from deployplane.emulator.builds.tarballcheck import tarball_error
from deployplane.emulator.settings import Settings
from deployplane.emulator.store.artifacts import UPLOAD_PREFIX, fill_upload, find_upload, sign
from deployplane.emulator.web.deps import database_of

__all__ = ["router"]

router = APIRouter()


def _refused(status: int, detail: str) -> Response:
    return JSONResponse({"detail": detail}, status_code=status)


class _TooLarge(Exception):
    pass


async def _read_body(request: Request, max_bytes: int) -> bytearray:
    """The body, refused as soon as it passes the limit (one buffer: no chunk list to
    join into a second copy of up to 200 MB)."""
    body = bytearray()
    async for chunk in request.stream():
        if len(body) + len(chunk) > max_bytes:
            raise _TooLarge
        body += chunk
    return body


def _signature_ok(key: bytes, object_path: str, request: Request) -> bool:
    expires = request.query_params.get("expires", "")
    signature = request.query_params.get("signature", "")
    # ASCII digits of a sane length: str.isdigit() also takes "²", which int() refuses,
    # and int() refuses more than 4300 digits (either was a 500).
    if not (expires.isascii() and expires.isdigit() and len(expires) <= 20) or not signature:
        return False
    content_type = request.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    expected = sign(key, object_path, int(expires), content_type)
    return hmac.compare_digest(expected, signature)


def _declared_too_large(request: Request, max_bytes: int) -> bool:
    declared = request.headers.get("content-length", "")
    return declared.isascii() and declared.isdigit() and int(declared) > max_bytes


@router.put(UPLOAD_PREFIX + "{object_path:path}", include_in_schema=False)
async def put_upload(object_path: str, request: Request) -> Response:
    settings: Settings = request.app.state.settings
    db = database_of(request)
    async with db.read() as conn:
        key = conn.secret_key
        upload = await find_upload(conn, object_path)
    if not _signature_ok(key, object_path, request):
        return _refused(403, "The request signature does not match (URL or Content-Type).")
    if int(request.query_params["expires"]) < time.time():
        return _refused(403, "The upload URL has expired.")
    if upload is None:
        return _refused(404, "No such upload.")
    if upload.used:
        return _refused(409, "This upload URL was used already.")
    if _declared_too_large(request, settings.max_upload_bytes):
        return _refused(413, "The upload is over the size limit.")
    try:
        data = await _read_body(request, settings.max_upload_bytes)
    except _TooLarge:
        return _refused(413, "The upload is over the size limit.")
    error = await asyncio.to_thread(tarball_error, data)
    if error is not None:
        return _refused(400, "The upload is not a gzip tarball.")
    digest = hashlib.sha256(data).hexdigest()
    async with db.write() as conn:
        stored = await fill_upload(conn, object_path, data, digest)
    if not stored:
        return _refused(409, "This upload URL was used already.")
    return Response(status_code=200)
