"""What a pass does with what it observed, decided by pure functions: create, send the
patch, or nothing; and whether the approval gate holds it.

The reconciler acts on these decisions (`reconciler._Pass`), and `deployplane plan`
shows them without acting: both call `decide` on an observation made by the very same
reads (`reconciler.look`), so the plan of a change is what the operator then does.
Each decision reads as one row of a plan (`change_of`): its action, why, which fields.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum, StrEnum
from typing import Any

from deployplane.reconcile.approval import AUTOMATIC, MANUAL, PendingChange
from deployplane.reconcile.external import Managed, Observation


class Step(Enum):
    """What a pass does on the control plane."""

    CREATE = "create"
    UPDATE = "update"
    NOTHING = "nothing"


class Action(StrEnum):
    """The words of a plan's rows. A kind's patch names its own action (an
    AgentDeployment's `new-revision` or `rebuild`; `update` for a PATCH that makes no
    revision); `delete` is a plan's word for a resource its manifests no longer have."""

    CREATE = "create"
    NEW_REVISION = "new-revision"
    REBUILD = "rebuild"
    UPDATE = "update"
    NONE = "none"
    DELETE = "delete"


@dataclass(frozen=True)
class Decision:
    step: Step
    held: bool = False
    """The step waits for an approval (updatePolicy Manual, this generation not
    approved): nothing is sent."""


@dataclass(frozen=True)
class Change:
    """One plan row's verdict: what a pass would do, why, and to which fields."""

    action: str
    reasons: tuple[str, ...] = ()
    fields: tuple[str, ...] = ()

    def pending(self, generation: int) -> PendingChange:
        """The change as `status.pendingChange` records it while it waits."""
        return PendingChange(
            generation=generation,
            action=self.action,
            reasons=list(self.reasons),
            fields=list(self.fields),
        )


def decide(
    mr: Managed[Any, Any], observed: Observation[Any, Any] | None, *, full: bool
) -> Decision:
    """What a pass does, from what it observed (`observed` None: there is no external
    resource to observe, or it is gone). A poll (`full` False) compared nothing, so it
    sends nothing."""
    if observed is None or not observed.exists:
        step = Step.CREATE
    elif full and observed.patch is not None:
        step = Step.UPDATE
    else:
        return Decision(Step.NOTHING)
    return Decision(step, held=awaits_approval(mr))


def change_of(decision: Decision, observed: Observation[Any, Any] | None) -> Change:
    """The decision as a plan row: a create; a patch in its kind's words (its action,
    the reasons, the fields); or none."""
    if decision.step is Step.CREATE:
        return Change(Action.CREATE)
    if decision.step is Step.UPDATE and observed is not None and observed.patch is not None:
        patch = observed.patch
        return Change(str(patch.action), tuple(patch.reasons), tuple(patch.fields))
    return Change(Action.NONE)


def awaits_approval(mr: Managed[Any, Any]) -> bool:
    """Whether a change of this generation must wait (`reconcile.approval`): the spec
    says updatePolicy Manual (a kind without the field: Automatic), and this generation
    is not approved."""
    manual = str(getattr(mr.spec, "update_policy", AUTOMATIC)) == MANUAL
    return manual and mr.approved_generation != mr.generation


def observe_only(mr: Managed[Any, Any]) -> bool:
    """Whether the resource's spec says ObserveOnly (a kind without the field: Full)."""
    return str(getattr(mr.spec, "management_policy", "Full")) == "ObserveOnly"


def deletes_external(mr: Managed[Any, Any]) -> bool:
    """Whether deleting the custom resource deletes the external resource: not with
    deletionPolicy Orphan, nor ObserveOnly (which never changes the control plane)."""
    orphan = str(getattr(mr.spec, "deletion_policy", "Delete")) == "Orphan"
    return not orphan and not observe_only(mr)
