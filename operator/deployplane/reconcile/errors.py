"""The external service's errors as the core sees them: classified by the kind's
external client (`deployplane.externals.errors`), so the core never imports the
control plane's exception tree."""

from __future__ import annotations

from enum import Enum

from deployplane.reconcile.conditions import Reason


class Refusal(Enum):
    """Why a create was refused, as far as the core's crash recovery cares."""

    CONFLICT = "conflict"
    """The natural key is taken (409)."""
    BAD_REQUEST = "bad_request"
    """Invalid, or perhaps the natural key taken (the published contract's 400)."""
    INVALID = "invalid"
    """Invalid, nothing else (422)."""


class ExternalError(Exception):
    """A call to the external service failed; `reason` and `terminal` say how the
    resource's conditions read it (a terminal error stalls until the spec changes,
    any other backs off, at least `retry_after` seconds when the service said so)."""

    def __init__(
        self,
        message: str,
        *,
        reason: Reason,
        terminal: bool,
        retry_after: float | None = None,
        refusal: Refusal | None = None,
    ) -> None:
        super().__init__(message)
        self.reason, self.terminal = reason, terminal
        self.retry_after = retry_after
        self.refusal = refusal

    def with_message(self, message: str, *, reason: Reason) -> ExternalError:
        return ExternalError(
            message,
            reason=reason,
            terminal=self.terminal,
            retry_after=self.retry_after,
            refusal=self.refusal,
        )
