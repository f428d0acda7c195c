"""The control plane's errors classified for the core (`deployplane.reconcile.errors`):
which retry and which stall, and how they read in a condition. Every kind's external
client goes through `classified`, so the generic core never sees `api.errors`."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from deployplane.api import errors
from deployplane.reconcile.conditions import Reason
from deployplane.reconcile.errors import ExternalError, Refusal
from deployplane.reconcile.external import (
    Connecter,
    DesiredT,
    ExternalClient,
    Managed,
    Observation,
    PatchT,
    SpecT,
)
from deployplane.reconcile.status import StatusT

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


@contextmanager
def _classifying() -> Iterator[None]:
    try:
        yield
    except errors.ControlPlaneError as exc:
        raise to_core(exc) from exc


class ClassifiedClient(ExternalClient[SpecT, StatusT, DesiredT, PatchT]):
    """An external client whose control-plane errors reach the core classified.

    Every method of the `ExternalClient` protocol is spelled out (the protocol is its
    base), so a method added to the protocol and not here fails mypy instead of
    skipping classification silently."""

    def __init__(self, inner: ExternalClient[SpecT, StatusT, DesiredT, PatchT]) -> None:
        self._inner = inner
        # Fixed for the life of a connected client (one pass of one resource).
        self.natural_key = inner.natural_key
        self.adopt_id = inner.adopt_id

    async def resolve(self, mr: Managed[SpecT, StatusT]) -> DesiredT:
        with _classifying():
            return await self._inner.resolve(mr)

    async def observe(
        self, mr: Managed[SpecT, StatusT], external_id: str, desired: DesiredT | None
    ) -> Observation[StatusT, PatchT]:
        with _classifying():
            return await self._inner.observe(mr, external_id, desired)

    async def find(self, mr: Managed[SpecT, StatusT], key: str | None = None) -> str | None:
        with _classifying():
            return await self._inner.find(mr, key)

    async def create(
        self, mr: Managed[SpecT, StatusT], desired: DesiredT
    ) -> Observation[StatusT, PatchT]:
        with _classifying():
            return await self._inner.create(mr, desired)

    async def update(
        self, mr: Managed[SpecT, StatusT], latest: Observation[StatusT, PatchT], patch: PatchT
    ) -> Observation[StatusT, PatchT]:
        with _classifying():
            return await self._inner.update(mr, latest, patch)

    async def delete(self, mr: Managed[SpecT, StatusT], external_id: str) -> bool:
        with _classifying():
            return await self._inner.delete(mr, external_id)


class ClassifiedConnecter(Connecter[SpecT, StatusT, DesiredT, PatchT]):
    """A connecter whose connecting and whose clients raise `ExternalError`, never
    `api.errors`."""

    def __init__(self, inner: Connecter[SpecT, StatusT, DesiredT, PatchT]) -> None:
        self._inner = inner

    async def connect(
        self, mr: Managed[SpecT, StatusT]
    ) -> ExternalClient[SpecT, StatusT, DesiredT, PatchT]:
        with _classifying():
            client = await self._inner.connect(mr)
        return ClassifiedClient(client)


def classified(
    connecter: Connecter[SpecT, StatusT, DesiredT, PatchT],
) -> Connecter[SpecT, StatusT, DesiredT, PatchT]:
    """`connecter`, whose clients (and connecting) raise `ExternalError`, never
    `api.errors`."""
    return ClassifiedConnecter(connecter)
