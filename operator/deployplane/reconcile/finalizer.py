"""Our finalizer, and what holds it while the custom resource is being deleted.

The operator puts `FINALIZER` on with its first write to an object (`writer.py`), so
every resource it acted on is finalized: the pass runner deletes (or orphans) the
external resource (`PassRunner.finalize`), and only then do the workers take the
finalizer off. Until the control plane is done, `NotYet` says why and when to look
again.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from deployplane.reconcile.schedule import Result, State, next_pass

FINALIZER: Final = "deployplane.io/finalizer"
"""Ours, put on by the operator's first write and taken off once the external resource
is gone (Kopf puts none of its own: the operator watches with event handlers)."""
DELETE_POLL_SECONDS: Final = 2.0
"""How soon to look again while the control plane is still deleting."""
DELETE_RETRY_SECONDS: Final = 10.0
"""How soon to try again when deleting failed and the service named no time."""


def has_finalizer(body: Mapping[str, Any]) -> bool:
    return FINALIZER in ((body.get("metadata") or {}).get("finalizers") or ())


def is_deleting(body: Mapping[str, Any]) -> bool:
    return bool((body.get("metadata") or {}).get("deletionTimestamp"))


@dataclass(frozen=True)
class NotYet:
    """The finalizer may not be released yet: look again in `retry_after` seconds."""

    message: str
    retry_after: float
    cause: BaseException | None = None
    """The error that stopped the delete (None: the control plane is still deleting)."""

    @property
    def result(self) -> Result:
        """Back in `retry_after`; a delete that failed also waits for the global retry
        rate, as any failed pass does."""
        state = State.PROGRESSING if self.cause is None else State.RETRYING
        return next_pass(state, self.retry_after)
