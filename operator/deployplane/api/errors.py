"""Typed errors of the control-plane API: the exception tree only.

Callers decide what to do by class, never by parsing messages: the operator turns a
`retryable` error into "come back later" and anything else into a terminal condition;
the CLI turns any of them into one line on stderr. This module imports no HTTP library,
so the generic reconciler can classify errors without depending on one; the mapping
from HTTP answers to these classes lives beside the client, in `api/responses.py`
(as httpx keeps `_exceptions.py` apart from its transport's mapping).
"""

from __future__ import annotations

from typing import Any

from deployplane.api.models import ValidationErrorEntry

__all__ = [
    "Conflict",
    "ControlPlaneError",
    "Forbidden",
    "Invalid",
    "NotFound",
    "RateLimited",
    "Unauthorized",
    "Unavailable",
]


class ControlPlaneError(Exception):
    """Any failure talking to the control plane."""

    retryable: bool = False

    def __init__(
        self,
        message: str,
        *,
        method: str = "",
        path: str = "",
        status_code: int | None = None,
        detail: str | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.method = method
        self.path = path
        self.status_code = status_code
        self.detail = detail
        self.retry_after = retry_after

    def __str__(self) -> str:
        return self.message


class NotFound(ControlPlaneError):
    """404: the resource does not exist (or is not visible to this workspace)."""


class Conflict(ControlPlaneError):
    """409: the request clashes with the resource's current state (e.g. a duplicate)."""


class Invalid(ControlPlaneError):
    """400/422: the request was refused as invalid; `errors` lists each field's problem."""

    def __init__(
        self, message: str, *, errors: list[ValidationErrorEntry] | None = None, **kw: Any
    ) -> None:
        super().__init__(message, **kw)
        self.errors: list[ValidationErrorEntry] = errors or []


class Unauthorized(ControlPlaneError):
    """401: no credentials, or the API key / bearer token was refused."""


class Forbidden(ControlPlaneError):
    """403: the credentials are valid but not allowed to do this."""


class RateLimited(ControlPlaneError):
    """429: too many requests; `retry_after` says when to try again, if the service said."""

    retryable = True


class Unavailable(ControlPlaneError):
    """5xx, connection failure or timeout: the service could not answer; try again later."""

    retryable = True
