"""The create marker: the one record that makes creation crash-safe.

Written on the object, as the annotation `deployplane.io/external-name` (the natural
key the resource is created under: a deployment's name, or its agent and environment;
a listener's computeId) with `deployplane.io/external-create-pending` (when the first
create call under that key was about to be made, Crossplane's annotation of that name)
right before the first create call, once the references are resolved (a pass that ends on a
dependency not ready creates nothing, so it marks nothing), with our finalizer in the
same merge patch of the object, so it costs no write of its own. It is Crossplane's
`crossplane.io/external-name`: it stays.
What it says depends on the status:
- no id recorded in the status: a create under that key may have happened; the pass
  looks the resource up by the key before creating, and adopts what it finds (a crash
  between the create call and the status write creates nothing twice; so does a status
  lost in a backup and restore, which keeps metadata but not the status subresource),
  unless the kind can tell it was made before that first create call (someone else's:
  `CreatePending.requested_at`);
- an id recorded: nothing. The id supersedes it.
Leaving it on costs nothing, where taking it off would cost one write per created
resource (a status patch cannot touch annotations): 4 writes per resource instead of
the floor's 3 (docs/benchmarks.md). A refused create (the key is
someone else's) takes it off, so that no later pass adopts what is not ours.

It lives here and on the object only: the reconciler reads it from
`Managed.create_pending` and writes it through a `MarkerWriter`, never through the status.

A marker may name a key the spec no longer does: admission lets the field that is the
key be corrected while no id is recorded (`crd.cel.fixed_once_created`). A create under
the marker's key may still have reached the control plane, its answer lost
(`refuse_an_earlier_create`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final, Protocol

from deployplane.reconcile.conditions import Reason
from deployplane.reconcile.errors import ExternalError

EXTERNAL_NAME_ANNOTATION: Final = "deployplane.io/external-name"
CREATE_PENDING_ANNOTATION: Final = "deployplane.io/external-create-pending"
_TIME_FORMAT: Final = "%Y-%m-%dT%H:%M:%SZ"  # RFC 3339 in UTC, as Kubernetes writes times


@dataclass(frozen=True)
class CreatePending:
    """A create that may have happened: the natural key it is (or was) made under."""

    key: str
    """The name (deployment) or computeId (listener) being created."""
    resource_version: str | None = None
    """The object's version when the marker was written (kept in memory for logs; the
    annotation holds the key alone, as Crossplane's external-name does)."""
    requested_at: datetime | None = None
    """When the first create call under this key was about to be made (the operator's
    clock, to the second; kept while the key stays the same): a resource found under the
    key that was made well before it is not this resource's create. None: a marker
    written by hand (adopt what the key finds) or before this was recorded."""

    def render(self) -> str:
        """The annotation's value: the key."""
        return self.key

    def render_requested_at(self) -> str | None:
        """The time's annotation value."""
        return None if self.requested_at is None else self.requested_at.strftime(_TIME_FORMAT)


def annotations_of(body: Mapping[str, Any]) -> Mapping[str, Any]:
    return (body.get("metadata") or {}).get("annotations") or {}


def read_marker(body: Mapping[str, Any]) -> CreatePending | None:
    """The object's marker: its annotation's value, as written (by a pass, or by hand to
    adopt a resource by that key), and when its first create call was about to be made
    (none, or a value that is no such time: not known)."""
    annotations = annotations_of(body)
    raw = annotations.get(EXTERNAL_NAME_ANNOTATION)
    if not raw:
        return None
    return CreatePending(str(raw), requested_at=_time(annotations.get(CREATE_PENDING_ANNOTATION)))


def same_marker(one: CreatePending | None, other: CreatePending | None) -> bool:
    """Whether two markers say the same: the same key, made at the same time, or both
    none (the resourceVersion a marker is kept with in memory says nothing of it)."""
    if one is None or other is None:
        return one is other
    return (one.key, one.requested_at) == (other.key, other.requested_at)


def _time(raw: Any) -> datetime | None:
    try:
        return datetime.strptime(str(raw), _TIME_FORMAT).replace(tzinfo=UTC) if raw else None
    except ValueError:
        return None


class MarkerWriter(Protocol):
    """The reconciler's durable writes of the marker (the pass runner implements them)."""

    async def mark(self, marker: CreatePending) -> None:
        """On the object before the create call, whatever happens after; raises
        `DependencyNotReady` when the object is gone, or when it carries another marker
        than the pass knew, written by another writer meanwhile (another replica of the
        operator, as in a handover): then nothing is created, and the next pass looks
        the resource up under the object's marker."""
        ...

    async def unmark(self) -> None:
        """The marker comes off: a refused create (the key is someone else's)."""
        ...


class Finder(Protocol):
    """What looks an external resource up by a natural key (`ExternalClient.find`)."""

    natural_key: str

    async def find(self, mr: Any, key: str | None = None) -> str | None: ...


async def refuse_an_earlier_create(ext: Finder, mr: Any, key: str, kind: str) -> None:
    """The marker names `key`, which the spec no longer does. If a create under it did
    reach the control plane, that one is this resource's under a key the spec does not
    name: a pass neither adopts nor deletes it (a Conflict: the user sets the field back
    to adopt it, or deletes it; deleting the resource deletes it). Else nothing: the
    pass creates under the spec's key, marking it."""
    found = await ext.find(mr, key)
    if found:
        raise ExternalError(
            f"{kind} {found} was created as {key!r} for this resource before its id was "
            f"recorded, and the spec now says {ext.natural_key!r}: set it back to {key!r} "
            f"to adopt it, or delete {kind} {found} on the control plane to create a new one",
            reason=Reason.CONFLICT,
            terminal=True,
        )
