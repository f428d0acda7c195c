"""The control plane's errors classified for the core (`deployplane.reconcile.errors`):
which retry and which stall, and how they read in a condition. Every kind's external
client goes through `classified`, so the generic core never sees `api.errors`."""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar, cast

from deployplane.api import errors
from deployplane.reconcile.conditions import Reason
from deployplane.reconcile.errors import ExternalError, Refusal

_TERMINAL_REASONS: dict[type[errors.ControlPlaneError], Reason] = {
    errors.Invalid: Reason.INVALID_SPEC,
    errors.Conflict: Reason.CONFLICT,
    errors.NotFound: Reason.NOT_FOUND,
    errors.Unauthorized: Reason.UNAUTHORIZED,
    errors.Forbidden: Reason.FORBIDDEN,
}
_AUTH_MESSAGES: dict[type[errors.ControlPlaneError], str] = {
    errors.Unauthorized: "the control plane refused the API key",
    errors.Forbidden: "the API key may not act in this workspace",
}


def classify(exc: errors.ControlPlaneError) -> tuple[Reason, bool]:
    """(reason, terminal) for a control-plane error, the ACK way: retryable errors back
    off and keep trying; everything a user must fix stalls until the spec changes."""
    if isinstance(exc, errors.RateLimited):
        return Reason.RATE_LIMITED, False
    for cls, reason in _TERMINAL_REASONS.items():
        if isinstance(exc, cls):
            return reason, True
    if exc.retryable:
        return Reason.CONTROL_PLANE_UNAVAILABLE, False
    return Reason.INVALID_SPEC, True


def error_message(exc: errors.ControlPlaneError) -> str:
    for cls, text in _AUTH_MESSAGES.items():
        if isinstance(exc, cls):
            return f"{text}: {exc}"
    return str(exc)


def to_core(exc: errors.ControlPlaneError) -> ExternalError:
    reason, terminal = classify(exc)
    refusal = None
    if isinstance(exc, errors.Conflict):
        refusal = Refusal.CONFLICT
    elif isinstance(exc, errors.Invalid):
        refusal = Refusal.BAD_REQUEST if exc.status_code == 400 else Refusal.INVALID
    return ExternalError(
        error_message(exc),
        reason=reason,
        terminal=terminal,
        retry_after=exc.retry_after,
        refusal=refusal,
    )


F = TypeVar("F", bound=Callable[..., Awaitable[Any]])


def _mapping(fn: F) -> F:
    @functools.wraps(fn)
    async def call(*args: Any, **kwargs: Any) -> Any:
        try:
            return await fn(*args, **kwargs)
        except errors.ControlPlaneError as exc:
            raise to_core(exc) from exc

    return cast(F, call)


class _Classified:
    """An external client whose control-plane errors reach the core classified."""

    _CALLS = frozenset({"resolve", "observe", "find", "create", "update", "delete"})

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._inner, name)
        return _mapping(value) if name in self._CALLS else value


class _ClassifiedConnecter:
    def __init__(self, inner: Any) -> None:
        self._inner = inner

    async def connect(self, mr: Any) -> Any:
        return _Classified(await _mapping(self._inner.connect)(mr))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


C = TypeVar("C")


def classified(connecter: C) -> C:
    """`connecter`, whose clients (and connecting) raise `ExternalError`, never
    `api.errors`."""
    return cast(C, _ClassifiedConnecter(connecter))
