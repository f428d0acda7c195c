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


Verdict = tuple[str, str, str]
"""(verdict, reason, message) of one workload object."""


def workload_node(obj: Mapping[str, Any], active: str | None) -> Node:
    kind = str(obj.get("kind", ""))
    metadata = obj.get("metadata") or {}
    verdict, reason, message = workload_verdict(kind, obj, active)
    return Node(
        kind,
        str(metadata.get("name", "")),
        verdict,
        reason,
        timestamp(metadata.get("creationTimestamp")),
        id=str(metadata.get("uid", "")),
        message=message,
    )


def workload_verdict(kind: str, obj: Mapping[str, Any], active: str | None) -> Verdict:
    """How one object the listener agent rendered stands, by its kind's own signals."""
    status = obj.get("status") or {}
    spec = obj.get("spec") or {}
    conditions = conditions_of(obj)
    if kind in ("Deployment", "StatefulSet"):
        return _replicas_verdict(spec, status, conditions)
    if kind == "ConfigMap":
        return _config_verdict(obj, active)
    if kind == "Service":
        headless = spec.get("clusterIP") == "None"  # the database's, for its StatefulSet
        return "Ready", "Headless" if headless else str(spec.get("type") or "ClusterIP"), ""
    if kind == "HorizontalPodAutoscaler":
        return _autoscaler_verdict(spec, status, conditions)
    if "Ready" in conditions or "Accepted" in conditions:  # ScaledObject, routes
        cond = conditions.get("Ready") or conditions["Accepted"]
        verdict = {"True": "Ready", "False": "NotReady"}.get(str(cond.get("status")), "Unknown")
        return verdict, str(cond.get("reason") or ""), str(cond.get("message") or "")
    parents = status.get("parents") or []  # an HTTPRoute's verdicts, per Gateway
    accepted = [
        c for p in parents for c in (p.get("conditions") or []) if c.get("type") == "Accepted"
    ]
    if accepted:
        ok = all(c.get("status") == "True" for c in accepted)
        return "Ready" if ok else "NotReady", str(accepted[0].get("reason") or ""), ""
    return "Exists", "", ""


def _replicas_verdict(
    spec: Mapping[str, Any], status: Mapping[str, Any], conditions: Mapping[str, Any]
) -> Verdict:
    desired = int(spec.get("replicas", 1) if spec.get("replicas") is not None else 1)
    ready = int(status.get("readyReplicas") or 0)
    verdict, reason, message = (
        "Ready" if ready >= desired else "NotReady",
        f"{ready}/{desired} ready",
        "",
    )
    progressing = conditions.get("Progressing", {})
    if progressing.get("status") == "False":
        verdict, reason = "NotReady", str(progressing.get("reason") or reason)
        message = str(progressing.get("message") or "")
    return verdict, reason, message


def _config_verdict(obj: Mapping[str, Any], active: str | None) -> Verdict:
    revision = str((obj.get("data") or {}).get(REVISION_KEY, ""))
    reason = f"revision {short(revision)}" if revision else "no revision"
    if active and revision and revision != active:
        return "Behind", reason, f"revision {revision} applied, {active} active"
    return "Applied", reason, ""


def _autoscaler_verdict(
    spec: Mapping[str, Any], status: Mapping[str, Any], conditions: Mapping[str, Any]
) -> Verdict:
    active_cond = conditions.get("ScalingActive", {})
    verdict = {"True": "Active", "False": "Inactive"}.get(str(active_cond.get("status")), "Unknown")
    message = (
        f"{status.get('currentReplicas', 0)} replicas, "
        f"{spec.get('minReplicas', 1)}..{spec.get('maxReplicas', '?')}"
    )
    return verdict, str(active_cond.get("reason") or ""), message


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
