"""Per-resource resync: the annotation `deployplane.io/resync-interval`.

Config Connector's `cnrm.cloud.google.com/reconcile-interval-in-seconds`, for
deployplane: how often a settled resource (Ready, or Stalled) is observed again on the
control plane, overriding the operator's DEPLOYPLANE_RESYNC_INTERVAL for that resource.
Whole seconds, `0` meaning never (the resource is still looked at on every change of its
spec or annotations, while a revision rolls and while errors are retried). A CRD's CEL
rules cannot see metadata, so a bad value cannot be refused at `kubectl apply`: the pass
keeps the operator's interval and says why in one Warning Event per value.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

RESYNC_ANNOTATION: Final = "deployplane.io/resync-interval"
MIN_RESYNC_SECONDS: Final = 10
"""Below this, resyncs of many resources would be a poll of the control plane."""
MAX_RESYNC_SECONDS: Final = 7 * 24 * 3600
NEVER: Final = None


@dataclass(frozen=True)
class Resync:
    """The interval a resource asks for: seconds, or None for never."""

    seconds: float | None
    problem: str | None = None
    """Why the annotation was not taken (the operator's interval applies), if it was not."""


def annotation_value(body: Mapping[str, Any]) -> str | None:
    annotations = (body.get("metadata") or {}).get("annotations") or {}
    value = annotations.get(RESYNC_ANNOTATION)
    return None if value is None else str(value)


def resync_of(body: Mapping[str, Any], default: float) -> Resync:
    """The resync interval of the resource `body`: its annotation's, else `default`."""
    raw = annotation_value(body)
    if raw is None:
        return Resync(default)
    value = raw.strip()
    if value.isdigit() and value.isascii():
        seconds = int(value)
        if seconds == 0:
            return Resync(NEVER)
        if MIN_RESYNC_SECONDS <= seconds <= MAX_RESYNC_SECONDS:
            return Resync(float(seconds))
    return Resync(
        default,
        f"annotation {RESYNC_ANNOTATION}={raw[:40]!r} ignored: it must be 0 (never) or "
        f"whole seconds from {MIN_RESYNC_SECONDS} to {MAX_RESYNC_SECONDS}; the operator's "
        f"{default:.0f}s applies",
    )
