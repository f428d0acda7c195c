"""Errors raised by the store, mapped to HTTP answers in one place (`app.py`).

The store knows nothing of HTTP; these carry just what the answer needs. Messages
never contain request values: they may be secrets.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "ConflictError",
    "DetailError",
    "ForbiddenError",
    "InvalidError",
    "NotFoundError",
    "RefusedError",
    "StoreError",
    "invalid",
]


class StoreError(Exception):
    """Base of the store's refusals."""


class DetailError(StoreError):
    """A refusal answered `{"detail": "<one sentence>"}`."""

    def __init__(self, detail: str) -> None:
        super().__init__(detail)
        self.detail = detail


class NotFoundError(DetailError):
    """The resource does not exist in this workspace (404)."""


class ForbiddenError(DetailError):
    """The workspace may not do this at all: a feature it does not have (403)."""


class ConflictError(DetailError):
    """The request collides with existing state (409)."""


class RefusedError(DetailError):
    """The service refuses the request as it stands (400, `{"detail": "<one sentence>"}`):
    the published contract answers 400, not 409, where a deployment create or PATCH
    cannot be done (a name taken, a deployment being deleted, a revision that cannot be
    redeployed) or where a request names something that is not there (a repo_url its
    integration does not list, a listener that does not exist)."""


class InvalidError(StoreError):
    """The request is well-formed but refused (422, HTTPValidationError shape)."""

    def __init__(self, errors: list[dict[str, Any]]) -> None:
        super().__init__("; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in errors))
        self.errors = errors


def invalid(loc: tuple[str | int, ...], msg: str, kind: str = "value_error") -> dict[str, Any]:
    """One HTTPValidationError entry."""
    return {"loc": list(loc), "msg": msg, "type": kind}
