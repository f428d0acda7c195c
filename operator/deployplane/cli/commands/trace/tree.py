"""`deployplane trace`'s tree, as a pure function of what the readers found.

Like `crossplane beta trace`: the custom resource, then what it stands for on the control
plane (the deployment, its latest and active revisions, its listener), then what the
listener's agent made of it in the cluster (`deployplane.dataplane.render`'s objects).
A piece that could not be found is a line with a reason (`Missing`), never an error, so
the tree is always printed in full and a reader sees where the chain breaks.

`build_*` turn the readers' data into `Node`s; `rows` flattens a tree into table rows
whose first cell carries the `├─`/`└─` prefix; `to_data` is the `-o json|yaml` shape.
Nothing here reads a clock, a file or the network: the golden tests pass `at`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from deployplane.api.models import Deployment, Listener, Revision
from deployplane.cli.commands.tables import Col, human_age
from deployplane.cli.commands.trace.nodes import (
    KIND_ORDER,
    Missing,
    Node,
    Workloads,
    conditions_of,
    short,
    timestamp,
    workload_node,
)

__all__ = [
    "COLUMNS",
    "Missing",
    "Node",
    "Workloads",
    "build_agentdeployment",
    "build_listener",
    "rows",
    "to_data",
]

COLUMNS = [
    Col("NAME"),
    Col("STATUS"),
    Col("REASON", drop=2),
    Col("AGE", drop=1),
    Col("ID", wide=True),
    Col("MESSAGE", wide=True),
]


def _value(status: object) -> str:
    """An API status: an enum member, or the string of a value newer than our enum."""
    return str(getattr(status, "value", status))


def _missing(kind: str, name: str, missing: Missing) -> Node:
    return Node(kind, name, "Missing", missing.reason, message=missing.message)


def custom_resource(kind: str, obj: Mapping[str, Any]) -> Node:
    """A custom resource's line: Ready's verdict, and the reason of the first of
    Synced/Ready that is not True (else Ready's)."""
    metadata = obj.get("metadata") or {}
    conditions = conditions_of(obj)
    ready = conditions.get("Ready", {})
    status = {"True": "Ready", "False": "NotReady"}.get(str(ready.get("status")), "Unknown")
    failing = next(
        (
            conditions[t]
            for t in ("Synced", "Ready")
            if conditions.get(t, {}).get("status") not in (None, "True")
        ),
        ready,
    )
    return Node(
        kind,
        str(metadata.get("name", "")),
        status,
        str(failing.get("reason") or ""),
        timestamp(metadata.get("creationTimestamp")),
        id=str(metadata.get("uid", "")),
        message=str(failing.get("message") or ""),
    )


def _revision_nodes(
    deployment: Deployment, revisions: Mapping[str, Revision | Missing]
) -> list[Node]:
    latest = deployment.latest_revision_id
    active = deployment.active_revision_id
    roles: dict[str, list[str]] = {}
    for role, rid in (("latest", latest), ("active", active)):
        if rid is not None:
            roles.setdefault(str(rid), []).append(role)
    if not roles:
        return [Node("Revision", "(none)", "Missing", "NoRevision", message="no revision yet")]
    nodes = []
    for revision_id, names in roles.items():
        label = f"{short(revision_id)} ({','.join(names)})"
        found = revisions.get(revision_id, Missing("NotRead"))
        if isinstance(found, Missing):
            nodes.append(
                Node(
                    "Revision",
                    label,
                    "Missing",
                    found.reason,
                    id=revision_id,
                    message=found.message,
                )
            )
            continue
        nodes.append(
            Node(
                "Revision",
                label,
                _value(found.status),
                "",
                found.created_at,
                id=revision_id,
            )
        )
    return nodes


def _workloads_node(workloads: Workloads | Missing, active: str | None) -> Node:
    if isinstance(workloads, Missing):
        return _missing("Workloads", "-", workloads)
    name = workloads.namespace
    if isinstance(workloads.objects, Missing):
        return Node(
            "Namespace",
            name,
            "Unreachable",
            workloads.objects.reason,
            message=workloads.objects.message,
        )
    if not workloads.objects:
        return Node(
            "Namespace",
            name,
            "Missing",
            "NoWorkloads",
            message="no data-plane objects of it in this namespace of the current cluster",
        )
    objects = sorted(
        workloads.objects,
        key=lambda o: (
            KIND_ORDER.get(str(o.get("kind")), len(KIND_ORDER)),
            str((o.get("metadata") or {}).get("name", "")),
        ),
    )
    children = tuple(workload_node(o, active) for o in objects)
    return Node("Namespace", name, "Found", f"{len(children)} objects", children=children)


def _listener_node(
    listener: Listener | Missing,
    listener_cr: Mapping[str, Any] | None,
    children: tuple[Node, ...],
) -> Node:
    if isinstance(listener, Missing):
        return Node(
            "Listener", "-", "Missing", listener.reason, message=listener.message, children=children
        )
    status, reason, message = "Registered", "", ""
    if listener_cr is not None:  # the Listener resource's verdict says more
        cr = custom_resource("Listener", listener_cr)
        status, reason, message = cr.status, cr.reason, cr.message
    return Node(
        "Listener",
        listener.compute_id,
        status,
        reason,
        listener.created_at,
        id=str(listener.id),
        message=message,
        children=children,
    )


def build_agentdeployment(
    resource: Mapping[str, Any],
    deployment: Deployment | Missing,
    revisions: Mapping[str, Revision | Missing],
    listener: Listener | Missing | None,
    listener_cr: Mapping[str, Any] | None,
    workloads: Workloads | Missing,
) -> Node:
    """AgentDeployment -> control-plane Deployment -> revisions, Listener -> workloads.

    `listener`: None when the deployment names no listener (the vendor's cloud runs it);
    `listener_cr`: the Listener resource of `listenerRef`, if any (its conditions)."""
    root = custom_resource("AgentDeployment", resource)
    if isinstance(deployment, Missing):
        return _with(root, _missing("Deployment", "-", deployment))
    children = _revision_nodes(deployment, revisions)
    if listener is None:
        children.append(
            Node("Listener", "(none)", "-", "NoListener", message="runs on the vendor's cloud")
        )
    else:
        active = (
            None if deployment.active_revision_id is None else str(deployment.active_revision_id)
        )
        workload = _workloads_node(workloads, active)
        children.append(_listener_node(listener, listener_cr, (workload,)))
    node = Node(
        "Deployment",
        deployment.name,
        _value(deployment.status),
        "",
        deployment.created_at,
        id=str(deployment.id),
        children=tuple(children),
    )
    return _with(root, node)


def build_listener(
    resource: Mapping[str, Any],
    listener: Listener | Missing,
    workloads: Sequence[Workloads] | Missing,
) -> Node:
    """Listener resource -> control-plane Listener -> its namespaces' workloads."""
    root = custom_resource("Listener", resource)
    if isinstance(listener, Missing):
        return _with(root, _missing("Listener", "-", listener))
    if isinstance(workloads, Missing):
        children: tuple[Node, ...] = (_workloads_node(workloads, None),)
    else:
        children = tuple(_workloads_node(w, None) for w in workloads)
    node = Node(
        "Listener",
        listener.compute_id,
        "Registered",
        "",
        listener.created_at,
        id=str(listener.id),
        children=children,
    )
    return _with(root, node)


def _with(root: Node, child: Node) -> Node:
    return Node(
        root.kind,
        root.name,
        root.status,
        root.reason,
        root.created,
        root.id,
        root.message,
        (*root.children, child),
    )


def rows(tree: Node, at: datetime) -> list[list[str]]:
    """Table rows, depth first; the NAME cell is `<prefix>Kind/name`."""
    found: list[list[str]] = []

    def walk(node: Node, prefix: str, branch: str) -> None:
        age = "-" if node.created is None else human_age(node.created, at)
        found.append(
            [
                f"{prefix}{branch}{node.kind}/{node.name}",
                node.status or "-",
                node.reason or "-",
                age,
                node.id or "-",
                node.message or "-",
            ]
        )
        below = prefix + {"": "", "├─ ": "│  ", "└─ ": "   "}[branch]
        for i, child in enumerate(node.children):
            walk(child, below, "└─ " if i == len(node.children) - 1 else "├─ ")

    walk(tree, "", "")
    return found


def to_data(node: Node) -> dict[str, Any]:
    """The `-o json|yaml` shape: every field, children nested, times in ISO 8601."""
    return {
        "kind": node.kind,
        "name": node.name,
        "status": node.status,
        "reason": node.reason or None,
        "message": node.message or None,
        "id": node.id or None,
        "created": None if node.created is None else node.created.isoformat(),
        "children": [to_data(c) for c in node.children],
    }
