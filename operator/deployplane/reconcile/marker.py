"""The create marker: the one record that makes creation crash-safe.

Written on the object, as the annotation `deployplane.io/external-name` (the natural
key the resource is created under: a deployment's name, a listener's computeId), before
the first create call, with our finalizer in the same merge patch of the object, so it
costs no write of its own. It is Crossplane's `crossplane.io/external-name`: it stays.
What it says depends on the status:
- no id recorded in the status: a create under that key may have happened; the pass
  looks the resource up by the key before creating, and adopts what it finds (a crash
  between the create call and the status write creates nothing twice; so does a status
  lost in a backup and restore, which keeps metadata but not the status subresource);
- an id recorded: nothing. The id supersedes it.
Leaving it on costs nothing, where taking it off costs one write per created resource
(a status patch cannot touch annotations): that write is what kept the operator at 4
writes per resource instead of 3 (docs/benchmarks.md). A refused create (the key is
someone else's) takes it off, so that no later pass adopts what is not ours.

It lives here and on the object only: the reconciler reads it from
`Managed.create_pending` and writes it through a `MarkerWriter`, never through the status.

Earlier versions wrote `deployplane.io/create-pending` (a JSON value; taken off once the
id was recorded), and before that `status.createPending`: both are still read, and the
next write of the object (or of the status) drops them.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, Protocol

EXTERNAL_NAME_ANNOTATION: Final = "deployplane.io/external-name"
LEGACY_ANNOTATION: Final = "deployplane.io/create-pending"
"""The marker of versions before issue 36 (taken off once the id was recorded)."""
LEGACY_STATUS_FIELD: Final = "createPending"


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

    @classmethod
    def parse(cls, raw: Any) -> CreatePending:
        """From the annotation's value, or an earlier version's JSON value or status
        field. A hand-written or damaged value still says "a create may have happened"."""
        value = raw
        if isinstance(raw, str) and raw.startswith("{"):
            try:
                value = json.loads(raw)
            except ValueError:
                value = raw
        if isinstance(value, Mapping) and value.get("key"):
            version = value.get("resourceVersion")
            return cls(str(value["key"]), None if version is None else str(version))
        return cls(str(raw))


def annotations_of(body: Mapping[str, Any]) -> Mapping[str, Any]:
    return (body.get("metadata") or {}).get("annotations") or {}


def read_marker(body: Mapping[str, Any]) -> CreatePending | None:
    """The object's marker: its annotation, else an earlier version's annotation or
    status field."""
    annotations = annotations_of(body)
    raw = annotations.get(EXTERNAL_NAME_ANNOTATION) or annotations.get(LEGACY_ANNOTATION)
    if not raw:
        raw = (body.get("status") or {}).get(LEGACY_STATUS_FIELD)
    return CreatePending.parse(raw) if raw else None


class MarkerWriter(Protocol):
    """The reconciler's durable writes of the marker (the pass runner implements them)."""

    async def mark(self, marker: CreatePending) -> None:
        """On the object before the create call, whatever happens after; raises
        `DependencyNotReady` when the object is gone (then nothing is created)."""
        ...

    async def unmark(self) -> None:
        """The marker comes off: a refused create (the key is someone else's)."""
        ...
