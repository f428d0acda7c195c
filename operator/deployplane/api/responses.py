"""HTTP answers and transport failures -> `deployplane.api.errors`, in exactly one place.

The original httpx exception is chained as `__cause__` by the client, so debugging keeps
the low-level detail. Messages name the method, the *path template* (e.g.
`/v2/deployments/{deployment_id}`) and the service's `detail`. They never contain request
headers, so an API key or bearer token cannot leak through a log line or a status
condition; values the client knows to be secret are additionally scrubbed from anything
the service echoes back.
"""

from __future__ import annotations

import email.utils
import time
from collections.abc import Iterable
from typing import Any

import httpx
from pydantic import ValidationError

from deployplane.api.errors import (
    Conflict,
    ControlPlaneError,
    Forbidden,
    Invalid,
    NotFound,
    RateLimited,
    Unauthorized,
    Unavailable,
)
from deployplane.api.models import ValidationErrorEntry

__all__ = ["REDACTED", "error_from", "parse_retry_after"]

REDACTED = "<redacted>"

_BY_STATUS: dict[int, type[ControlPlaneError]] = {
    400: Invalid,
    401: Unauthorized,
    403: Forbidden,
    404: NotFound,
    409: Conflict,
    422: Invalid,
    429: RateLimited,
}


def parse_retry_after(value: str | None, *, now: float | None = None) -> float | None:
    """Seconds to wait from a `Retry-After` header (delta-seconds or an HTTP date)."""
    if value is None or not value.strip():
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def _forms(secret: str) -> list[str]:
    """How `secret` may show in a message: as is, stripped, and escaped as a str or bytes
    repr shows it (h11 refuses a key with a trailing newline, a common slip of a key
    file or Secret, quoting it as `Illegal header value b'KEY\\n'`). Longest first."""
    forms = {secret, secret.strip(), repr(secret)[1:-1], repr(secret.encode())[2:-1]}
    return sorted((form for form in forms if form), key=len, reverse=True)


def _scrub(text: str, secrets: Iterable[str]) -> str:
    for secret in secrets:
        for form in _forms(secret):
            text = text.replace(form, REDACTED)
    return text


def _format_entries(entries: list[ValidationErrorEntry]) -> str:
    return "; ".join(f"{'.'.join(str(part) for part in e.loc)}: {e.msg}" for e in entries)


def _detail_of(response: httpx.Response) -> tuple[str | None, list[ValidationErrorEntry]]:
    """The service's `detail` as text, and the 422 entries when the body has them."""
    try:
        body = response.json()
    except ValueError:
        return None, []
    detail = body.get("detail") if isinstance(body, dict) else None
    if isinstance(detail, str):
        return detail, []
    if isinstance(detail, list):
        try:
            entries = [ValidationErrorEntry.model_validate(item) for item in detail]
        except ValidationError:
            return None, []
        return _format_entries(entries), entries
    return None, []


def error_from(
    method: str,
    path: str,
    outcome: httpx.Response | httpx.TransportError,
    *,
    secrets: Iterable[str] = (),
) -> ControlPlaneError:
    """Map a non-2xx response or a transport exception to the most specific error.

    `path` is the path template of the call. `secrets` are values (API key, token)
    scrubbed from anything the service or the network stack put into the message.
    """
    secrets = tuple(secrets)
    where = f"{method} {path}"
    if isinstance(outcome, httpx.TransportError):
        reason = _scrub(str(outcome) or type(outcome).__name__, secrets)
        if isinstance(outcome, httpx.TimeoutException):
            cls: type[ControlPlaneError] = Unavailable
            what = "timed out"
        elif isinstance(outcome, httpx.NetworkError | httpx.RemoteProtocolError):
            cls, what = Unavailable, "connection failed"
        else:  # a local misconfiguration (bad URL scheme, proxy): retrying cannot help
            cls, what = ControlPlaneError, "request failed"
        return cls(
            f"{where}: {what} ({type(outcome).__name__}: {reason})", method=method, path=path
        )

    status = outcome.status_code
    detail, entries = _detail_of(outcome)
    if detail is not None:
        detail = _scrub(detail, secrets)
    retry_after = parse_retry_after(outcome.headers.get("retry-after"))
    cls = _BY_STATUS.get(status) or (Unavailable if status >= 500 else ControlPlaneError)
    headline = f"{where}: {status} {outcome.reason_phrase}".rstrip()
    message = f"{headline}: {detail}" if detail else headline
    common: dict[str, Any] = {
        "method": method,
        "path": path,
        "status_code": status,
        "detail": detail,
        "retry_after": retry_after,
    }
    if cls is Invalid:
        scrubbed = [e.model_copy(update={"msg": _scrub(e.msg, secrets)}) for e in entries]
        return Invalid(message, errors=scrubbed, **common)
    return cls(message, **common)
