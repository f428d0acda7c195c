"""A plan's rows and its exit code: pure data.

A row is one resource: its kind, namespace and name, the action (the reconciler's words,
`reconcile.decision.Action`, plus `refused` for what the apiserver would not take and
`error` for what could not be planned), the reasons and the fields. Never a value: the
fields are names, the reasons the decision's words or the apiserver's messages.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import IntEnum
from typing import Any, Final

from deployplane.reconcile.decision import Action

__all__ = [
    "ERROR",
    "HELD",
    "REFUSED",
    "PlanExit",
    "Row",
    "exit_code",
    "refusal_row",
    "summary",
]

REFUSED: Final = "refused"
"""The apiserver's server-side dry-run said no (schema, CEL rules, immutable fields)."""
ERROR: Final = "error"
"""The row could not be planned: the control plane or Kubernetes did not answer, or
refused the plan's reads, or the resource waits for something the change does not
bring."""
HELD: Final = "awaits approval (updatePolicy Manual)"
"""The reason a change of a Manual resource carries: applying the manifests is not
enough, `deployplane approve` sends it."""


class PlanExit(IntEnum):
    """`terraform plan -detailed-exitcode`'s, as `kubectl diff`'s: what CI reads."""

    NOTHING = 0
    ERROR = 1
    CHANGES = 2


@dataclass(frozen=True)
class Row:
    kind: str
    namespace: str
    name: str
    action: str
    reasons: tuple[str, ...] = ()
    fields: tuple[str, ...] = ()

    @property
    def changes(self) -> bool:
        return self.action not in (Action.NONE, REFUSED, ERROR)

    @property
    def failed(self) -> bool:
        return self.action in (REFUSED, ERROR)

    def as_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "namespace": self.namespace,
            "name": self.name,
            "action": self.action,
            "reasons": list(self.reasons),
            "fields": list(self.fields),
        }


def exit_code(rows: Iterable[Row]) -> PlanExit:
    """1 when anything is refused or could not be planned, else 2 when anything would
    change, else 0."""
    listed = list(rows)
    if any(row.failed for row in listed):
        return PlanExit.ERROR
    return PlanExit.CHANGES if any(row.changes for row in listed) else PlanExit.NOTHING


_ORDER: Final = (
    Action.CREATE,
    Action.NEW_REVISION,
    Action.REBUILD,
    Action.UPDATE,
    Action.DELETE,
    Action.NONE,
    REFUSED,
    ERROR,
)
_WORDS: Final = {
    Action.CREATE: "to create",
    Action.NEW_REVISION: "new revision",
    Action.REBUILD: "rebuild",
    Action.UPDATE: "update",
    Action.DELETE: "to delete",
    Action.NONE: "unchanged",
    REFUSED: "refused",
    ERROR: "not planned",
}


def summary(rows: Sequence[Row]) -> str:
    """One line: how many of each action, in a fixed order (`3 unchanged, 1 refused`)."""
    counts = Counter(row.action for row in rows)
    parts = [f"{counts[action]} {_WORDS[action]}" for action in _ORDER if counts[action]]
    parts += [f"{n} {action}" for action, n in counts.items() if action not in _ORDER]
    return ", ".join(parts) or "no resources"


def refusal_row(kind: str, namespace: str, name: str, status: Mapping[str, Any]) -> Row:
    """The row of an apiserver refusal (a `Status` answer): its causes field by field
    (each CEL rule's or schema check's message, and the field it names); its message
    when it gives no causes."""
    details = status.get("details") or {}
    causes = [c for c in details.get("causes") or [] if isinstance(c, Mapping)]
    if not causes:
        message = " ".join(str(status.get("message") or status.get("reason") or "").split())
        return Row(kind, namespace, name, REFUSED, (message or "refused",))
    reasons = tuple(" ".join(str(c.get("message", "")).split()) for c in causes)
    fields = tuple(str(c.get("field", "")) for c in causes)
    return Row(kind, namespace, name, REFUSED, reasons, fields)
