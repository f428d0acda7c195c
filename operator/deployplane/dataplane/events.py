"""Warning Events the agent posts where `kubectl describe` shows them: what a render did
otherwise than the spec asks (`render.RenderWarning`), on the object it concerns.

An Event is applied under a name derived from what it says, so saying the same thing
again (the next revision, a re-render) updates one Event instead of adding another.
"""

from __future__ import annotations

import hashlib
import socket
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from deployplane.dataplane.render import RenderWarning

__all__ = ["COMPONENT", "warning_event"]

COMPONENT = "deployplane-listener-agent"
# The apiserver refuses a longer message.
MESSAGE_MAX = 1024

Obj = dict[str, Any]


def warning_event(involved: Mapping[str, Any], warning: RenderWarning, now: datetime) -> Obj:
    """A core/v1 Warning Event about `involved` (an object as the apiserver returned it,
    with its uid: `kubectl describe` finds Events by it)."""
    meta = involved["metadata"]
    said = f"{warning.reason}\n{warning.message}".encode()
    name = f"{meta['name']}.{hashlib.sha256(said).hexdigest()[:16]}"
    when = now.strftime("%Y-%m-%dT%H:%M:%SZ")
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": name, "namespace": meta["namespace"]},
        "type": "Warning",
        "reason": warning.reason,
        "message": warning.message[:MESSAGE_MAX],
        "involvedObject": {
            "apiVersion": involved["apiVersion"],
            "kind": involved["kind"],
            "name": meta["name"],
            "namespace": meta["namespace"],
            "uid": meta["uid"],
        },
        "source": {"component": COMPONENT},
        "reportingComponent": COMPONENT,
        "reportingInstance": socket.gethostname(),
        "firstTimestamp": when,
        "lastTimestamp": when,
        "count": 1,
    }
