"""The core/v1 Event the operator posts for a recorded `EventRecord`."""

from __future__ import annotations

from typing import Any, Final

COMPONENT: Final = "deployplane-operator"
EVENT_MESSAGE_MAX: Final = 1024
"""The apiserver refuses a longer Event message."""


def event_body(pending: Any, instance: str) -> tuple[str, dict[str, Any]]:
    """(namespace, Event) for a `reconcile.eventrecorder.PendingEvent`: reported by
    `deployplane-operator`, `instance` (this pod), the action the event records."""
    involved, event = pending.involved, pending.event
    meta = involved.get("metadata") or {}
    namespace = meta.get("namespace") or "default"
    message = event.message
    if len(message) > EVENT_MESSAGE_MAX:
        half = EVENT_MESSAGE_MAX // 2
        message = f"{message[: half - 1]}...{message[-(half - 2) :]}"
    when = pending.recorded_at.isoformat()
    return namespace, {
        "metadata": {"namespace": namespace, "generateName": "deployplane-"},
        "action": event.action,
        "type": event.type,
        "reason": event.reason,
        "message": message,
        "reportingComponent": COMPONENT,
        "reportingInstance": instance,
        "source": {"component": COMPONENT, "host": instance},
        "involvedObject": {
            "apiVersion": involved.get("apiVersion"),
            "kind": involved.get("kind"),
            "name": meta.get("name"),
            "uid": meta.get("uid"),
            "namespace": namespace,
        },
        "firstTimestamp": when,
        "lastTimestamp": when,
        "eventTime": when,
    }
