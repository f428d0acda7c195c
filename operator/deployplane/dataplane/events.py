"""Warning Events the agent posts where `kubectl describe` shows them: what a render did
otherwise than the spec asks (`render.RenderWarning`), on the object it concerns.

An Event is applied under a name derived from what it says, so saying the same thing
again (the next revision, a re-render) updates one Event instead of adding another.
"""

from __future__ import annotations

import hashlib
import logging
import socket
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from deployplane.dataplane.kube import Cluster, ClusterError
from deployplane.dataplane.render import LABEL_COMPONENT, SERVER, Rendered, RenderWarning

__all__ = ["COMPONENT", "post_warnings", "warning_event"]

COMPONENT = "deployplane-listener-agent"
# The apiserver refuses a longer message.
MESSAGE_MAX = 1024

Obj = dict[str, Any]

log = logging.getLogger(__name__)


async def post_warnings(cluster: Cluster, rendered: Rendered, applied: Sequence[Obj]) -> None:
    """Each of `rendered`'s warnings as a Warning Event on the agent-server Deployment
    (as `applied` answered it: with its uid). An Event that cannot be posted is logged:
    it never fails the rollout."""
    server = next(
        (
            obj
            for obj in applied
            if obj.get("kind") == "Deployment"
            and (obj["metadata"].get("labels") or {}).get(LABEL_COMPONENT) == SERVER
        ),
        None,
    )
    if server is None:
        return
    for warning in rendered.warnings:
        try:
            await cluster.apply(warning_event(server, warning, datetime.now(UTC)))
        except ClusterError as exc:
            log.warning("event %s not posted: %s", warning.reason, exc)


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
