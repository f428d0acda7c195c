"""The create marker: the one record that makes creation crash-safe.

Written on the object, as the annotation `deployplane.io/external-name` (the natural
key the resource is created under: a deployment's name, a listener's computeId) right
before the first create call, once the references are resolved (a pass that ends on a
dependency not ready creates nothing, so it marks nothing), with our finalizer in the
same merge patch of the object, so it costs no write of its own. It is Crossplane's
`crossplane.io/external-name`: it stays.
What it says depends on the status:
- no id recorded in the status: a create under that key may have happened; the pass
  looks the resource up by the key before creating, and adopts what it finds (a crash
  between the create call and the status write creates nothing twice; so does a status
  lost in a backup and restore, which keeps metadata but not the status subresource);
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
from typing import Any, Final, Protocol

from deployplane.reconcile.conditions import Reason
from deployplane.reconcile.errors import ExternalError

EXTERNAL_NAME_ANNOTATION: Final = "deployplane.io/external-name"


@dataclass(frozen=True)
class CreatePending:
    """A create that may have happened: the natural key it is (or was) made under."""

    key: str
    """The name (deployment) or computeId (listener) being created."""
    resource_version: str | None = None
    """The object's version when the marker was written (kept in memory for logs; the
    annotation holds the key alone, as Crossplane's external-name does)."""

    def render(self) -> str:
        """The annotation's value: the key."""
        return self.key


def annotations_of(body: Mapping[str, Any]) -> Mapping[str, Any]:
    return (body.get("metadata") or {}).get("annotations") or {}


def read_marker(body: Mapping[str, Any]) -> CreatePending | None:
    """The object's marker: its annotation's value, as written (by a pass, or by hand to
    adopt a resource by that key)."""
    raw = annotations_of(body).get(EXTERNAL_NAME_ANNOTATION)
    return CreatePending(str(raw)) if raw else None


class MarkerWriter(Protocol):
    """The reconciler's durable writes of the marker (the pass runner implements them)."""

    async def mark(self, marker: CreatePending) -> None:
        """On the object before the create call, whatever happens after; raises
        `DependencyNotReady` when the object is gone (then nothing is created)."""
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
