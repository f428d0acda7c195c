"""Desired vs latest for a listener: pure functions, the PATCH body (ACK's `delta`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from deployplane.api import errors
from deployplane.api.models import Listener, ListenerCreate, ListenerPatch
from deployplane.externals.diffing import differing, dump
from deployplane.kinds.listener.spec import ListenerSpec

_MANAGED = {"version", "compute_config"}


@dataclass(frozen=True)
class ListenerDelta:
    body: ListenerPatch
    fields: tuple[str, ...]
    action: str = "update"
    """A listener has no revisions: a PATCH is an update."""
    reasons: tuple[str, ...] = ()


def wanted(spec: ListenerSpec) -> ListenerCreate:
    """The listener the spec asks for, as the typed POST body: what the spec leaves out is
    left unset, and is not ours to manage. `compute_config` is required by the published
    create: `{}` when the spec has none, which `diff` prunes (so still not managed)."""
    managed: dict[str, Any] = dump(spec, include=_MANAGED, exclude_unset=True)
    body = {
        "compute_type": spec.compute_type.value,
        "compute_id": spec.compute_id,
        "compute_config": {},
        **managed,
    }
    return ListenerCreate.model_validate(body, by_alias=False, by_name=True)


def diff(want: ListenerCreate, latest: Listener) -> ListenerDelta | None:
    """The managed fields the spec sets whose value differs (None when in sync)."""
    mine = dump(want, include=_MANAGED, exclude_unset=True)
    patch = differing(mine, dump(latest, include=_MANAGED))
    if not patch:
        return None
    return ListenerDelta(
        ListenerPatch.model_validate(patch, by_alias=False, by_name=True), tuple(patch)
    )


def check_identity(spec: ListenerSpec, latest: Listener) -> None:
    """computeType/computeId cannot change: a listener that differs is somebody else's."""
    if latest.compute_id != spec.compute_id or latest.compute_type != spec.compute_type:
        raise errors.Conflict(
            f"listener {latest.id} has computeType/computeId "
            f"{latest.compute_type.value}/{latest.compute_id}, the spec says "
            f"{spec.compute_type.value}/{spec.compute_id}; they cannot change"
        )
