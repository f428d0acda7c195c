"""The create-pending marker: the one record that makes creation crash-safe.

Written on the object, as the annotation `deployplane.io/create-pending`, before the
create call (with our finalizer, in the same merge patch of the object, so it costs no
write of its own); a crash between the create call and recording the new id in the
status is then recovered by looking the resource up by its natural key instead of
creating it twice. A recorded id supersedes it: once the status the apiserver holds
has the id, the pass takes the marker off (one write, as Crossplane's create-succeeded
annotation costs one), never before; a refused create takes it off too. It lives here
and on the object only: the reconciler reads it from `Managed.create_pending` and
writes it through a `MarkerWriter`, never through the status.

Earlier versions kept it in the status (`status.createPending`): read once as the
marker, dropped by the next status write.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, Protocol

CREATE_PENDING_ANNOTATION: Final = "deployplane.io/create-pending"
LEGACY_STATUS_FIELD: Final = "createPending"


@dataclass(frozen=True)
class CreatePending:
    """A create in flight: the natural key being created, at which object version."""

    key: str
    """The name (deployment) or computeId (listener) being created."""
    resource_version: str | None = None

    def render(self) -> str:
        """The annotation's value."""
        value = {"key": self.key, "resourceVersion": self.resource_version}
        return json.dumps({k: v for k, v in value.items() if v is not None}, separators=(",", ":"))

    @classmethod
    def parse(cls, raw: Any) -> CreatePending:
        """From the annotation's value (or an earlier version's status field). A
        hand-written or damaged value still says "a create may have happened"."""
        value = raw
        if isinstance(raw, str):
            try:
                value = json.loads(raw)
            except ValueError:
                value = None
        if isinstance(value, Mapping) and value.get("key"):
            version = value.get("resourceVersion")
            return cls(str(value["key"]), None if version is None else str(version))
        return cls(str(raw))


def read_marker(body: Mapping[str, Any]) -> CreatePending | None:
    """The object's marker: its annotation, else an earlier version's status field."""
    annotations = (body.get("metadata") or {}).get("annotations") or {}
    raw = annotations.get(CREATE_PENDING_ANNOTATION)
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
        """The marker comes off: a refused create (no create may have happened), or a
        create recorded (the id is in the status)."""
        ...
