"""The pieces of `deployplane trace`'s tree (`Node`, `Missing`, `Workloads`) and the line
of one data-plane object: its verdict read from the object as Kubernetes returned it
(replicas for Deployments and StatefulSets, conditions for autoscalers and routes, the
revision the owner ConfigMap applied). Pure, like `tree`, which assembles the tree.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

__all__ = [
    "KIND_ORDER",
    "Missing",
    "Node",
    "Workloads",
    "conditions_of",
    "short",
    "timestamp",
    "workload_node",
]

# The owner ConfigMap's key for the revision the agent applied (its data, written by
# deployplane.dataplane.render.context; the agent's OWNER_MARKER).
REVISION_KEY = "revision-id"


@dataclass(frozen=True)
class Missing:
    """A piece the readers could not get: `reason` is a CamelCase word as in a
    condition's, `message` says what to do about it."""

    reason: str
    message: str = ""


@dataclass(frozen=True)
class Node:
    """One line of the tree."""

    kind: str
    name: str
    status: str
    reason: str = ""
    created: datetime | None = None
    id: str = ""
    message: str = ""
    children: tuple[Node, ...] = field(default_factory=tuple)


@dataclass(frozen=True)
class Workloads:
    """The data plane's objects of a deployment (or listener) in one namespace of the
    current cluster, or why they could not be read."""

    namespace: str
    objects: Sequence[Mapping[str, Any]] | Missing


def short(identifier: object) -> str:
    return str(identifier)[:8]


def timestamp(value: object) -> datetime | None:
    if isinstance(value, datetime):
        return value
    if isinstance(value, str) and value:
        try:
            return datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return None
    return None


def conditions_of(obj: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    found = (obj.get("status") or {}).get("conditions") or []
    return {c.get("type", ""): c for c in found if isinstance(c, Mapping)}


def workload_node(obj: Mapping[str, Any], active: str | None) -> Node:
    kind = str(obj.get("kind", ""))
    metadata = obj.get("metadata") or {}
    status = obj.get("status") or {}
    spec = obj.get("spec") or {}
    conditions = conditions_of(obj)
    verdict, reason, message = "Exists", "", ""
    if kind in ("Deployment", "StatefulSet"):
        desired = int(spec.get("replicas", 1) if spec.get("replicas") is not None else 1)
        ready = int(status.get("readyReplicas") or 0)
        verdict = "Ready" if ready >= desired else "NotReady"
        reason = f"{ready}/{desired} ready"
        progressing = conditions.get("Progressing", {})
        if progressing.get("status") == "False":
            verdict, reason = "NotReady", str(progressing.get("reason") or reason)
            message = str(progressing.get("message") or "")
    elif kind == "ConfigMap":
        revision = str((obj.get("data") or {}).get(REVISION_KEY, ""))
        verdict = "Applied"
        reason = f"revision {short(revision)}" if revision else "no revision"
        if active and revision and revision != active:
            verdict, message = "Behind", f"revision {revision} applied, {active} active"
    elif kind == "Service":
        headless = spec.get("clusterIP") == "None"  # the database's, for its StatefulSet
        verdict, reason = "Ready", "Headless" if headless else str(spec.get("type") or "ClusterIP")
    elif kind == "HorizontalPodAutoscaler":
        active_cond = conditions.get("ScalingActive", {})
        verdict = {"True": "Active", "False": "Inactive"}.get(
            str(active_cond.get("status")), "Unknown"
        )
        reason = str(active_cond.get("reason") or "")
        message = (
            f"{status.get('currentReplicas', 0)} replicas, "
            f"{spec.get('minReplicas', 1)}..{spec.get('maxReplicas', '?')}"
        )
    elif "Ready" in conditions or "Accepted" in conditions:  # ScaledObject, routes
        cond = conditions.get("Ready") or conditions["Accepted"]
        verdict = {"True": "Ready", "False": "NotReady"}.get(str(cond.get("status")), "Unknown")
        reason, message = str(cond.get("reason") or ""), str(cond.get("message") or "")
    else:
        parents = status.get("parents") or []  # an HTTPRoute's verdicts, per Gateway
        accepted = [
            c for p in parents for c in (p.get("conditions") or []) if c.get("type") == "Accepted"
        ]
        if accepted:
            ok = all(c.get("status") == "True" for c in accepted)
            verdict = "Ready" if ok else "NotReady"
            reason = str(accepted[0].get("reason") or "")
    return Node(
        kind,
        str(metadata.get("name", "")),
        verdict,
        reason,
        timestamp(metadata.get("creationTimestamp")),
        id=str(metadata.get("uid", "")),
        message=message,
    )


# Owner first, then the order of docs/dataplane.md's table of objects.
KIND_ORDER = {
    k: i
    for i, k in enumerate(
        (
            "ConfigMap",
            "Deployment",
            "StatefulSet",
            "Service",
            "HorizontalPodAutoscaler",
            "ScaledObject",
            "Ingress",
            "HTTPRoute",
        )
    )
}
