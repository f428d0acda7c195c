"""Which control-plane errors retry and which stall, and how they read in a condition."""

from __future__ import annotations

from deployplane.api import errors
from deployplane.reconcile.conditions import Reason

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
