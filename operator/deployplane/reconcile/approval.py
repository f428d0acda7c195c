"""The approval gate: `spec.updatePolicy: Manual` holds every change a pass would send
to the control plane until someone approves the generation it belongs to.

An approval is the annotation `deployplane.io/approved-generation` naming a
`metadata.generation` (`deployplane approve NAME`, or `kubectl annotate` alone): it is
recorded on the resource, and it approves that generation only. An edit of the spec
makes a new generation, whose change waits again, so a newer edit made before the
approval replaces the pending change and needs an approval of its own.

What the gate holds, and what it does not (docs/operator.md, "Manual updates"):
- a create (the first POST, or creating again a deployment deleted on the control
  plane) and a PATCH, whether an edit of the spec or drift put back: the pass computes
  the change, records it in `status.pendingChange`, and sends nothing;
- a deletion is not held: deleting the resource is itself the decision (and
  `deletionPolicy: Orphan` keeps the deployment), and a finalizer waiting for an
  approval would hold the namespace's deletion too;
- an approved generation's changes go out as under Automatic, drift put back included:
  that is the spec someone approved.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from pydantic import Field

from deployplane.reconcile.conditions import StatusModel

APPROVED_GENERATION_ANNOTATION: Final = "deployplane.io/approved-generation"
MANUAL: Final = "Manual"
AUTOMATIC: Final = "Automatic"


class PendingChange(StatusModel):
    """A change held for approval: the plan's row for it and the generation it belongs to."""

    generation: int = Field(description="The metadata.generation this change belongs to.")
    action: str = Field(
        description="What approving it does: create, new-revision, rebuild or update."
    )
    reasons: list[str] = Field(
        default_factory=list,
        description="Why a revision is made (image, source, config), when one is.",
    )
    fields: list[str] = Field(
        default_factory=list, description="The spec fields that differ (never values)."
    )


def approved_generation(body: Mapping[str, Any]) -> int | None:
    """The generation the annotation approves; None without one (or with a value that
    names no generation, which approves nothing)."""
    annotations = (body.get("metadata") or {}).get("annotations") or {}
    raw = str(annotations.get(APPROVED_GENERATION_ANNOTATION, "")).strip()
    return int(raw) if raw.isdigit() else None


def waiting_message(name: str, namespace: str, change: PendingChange) -> str:
    """The condition's message while a change waits: what it is, how to approve it."""
    what = change.action
    if change.reasons:
        what += f" ({', '.join(change.reasons)})"
    if change.fields:
        what += f" of {', '.join(change.fields)}"
    return (
        f"generation {change.generation} waits for approval (updatePolicy Manual): {what}; "
        f"approve it with `deployplane approve {name} -n {namespace}` (or annotate "
        f"{APPROVED_GENERATION_ANNOTATION}={change.generation})"
    )
