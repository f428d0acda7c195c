"""What a rendered deployment looks like in the cluster: the rollout's verdict.

The agent reads what it applied (the agent-server Deployment and its pods, the
database's StatefulSet, the route) and `rollout` (pure) says what it means.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from deployplane.api.dataplane import ReportedDeploymentStatus, ReportedStatus
from deployplane.dataplane.kube import Cluster
from deployplane.dataplane.render import LABEL_COMPONENT, LABEL_DEPLOYMENT_ID, SERVER, Rendered
from deployplane.dataplane.rollout import (
    Verdict,
    database_ready,
    pod_states,
    rollout_verdict,
    route_waiting,
)
from deployplane.dataplane.vendorparts import route_of

__all__ = ["observe_rollout"]

Obj = dict[str, Any]


async def observe_rollout(
    cluster: Cluster, rendered: Rendered, revision_id: str
) -> tuple[Verdict, ReportedDeploymentStatus]:
    """The rollout of `revision_id` as `rendered`, and the deployment status the
    database gives (READY, or AWAITING_DATABASE)."""
    server = _find(rendered.objects, "Deployment", SERVER)
    database = _find(rendered.objects, "StatefulSet", None)
    route = route_of(rendered.objects)
    current, pods, statefulset, applied_route = await asyncio.gather(
        _read(cluster, server, "apps/v1", "Deployment"),
        _server_pods(cluster, rendered.namespace, server),
        _read(cluster, database, "apps/v1", "StatefulSet"),
        _read(cluster, route, *_type_of(route)),
    )
    ready = database is None or database_ready(statefulset)
    db_status = (
        ReportedDeploymentStatus.READY if ready else ReportedDeploymentStatus.AWAITING_DATABASE
    )
    verdict = rollout_verdict(current, pods, revision_id)
    if verdict.status is ReportedStatus.DEPLOYED and route is not None:
        waiting = route_waiting(applied_route)
        if waiting is not None:
            verdict = Verdict(ReportedStatus.DEPLOYING, waiting)
    return replace(verdict, lines=tuple(pod_states(pods))), db_status


async def _read(cluster: Cluster, rendered: Obj | None, api_version: str, kind: str) -> Obj | None:
    """The cluster's copy of a rendered object (None: not rendered, or absent)."""
    if rendered is None:
        return None
    meta = rendered["metadata"]
    return await cluster.get(api_version, kind, meta["namespace"], meta["name"])


async def _server_pods(cluster: Cluster, namespace: str, server: Obj | None) -> list[Obj]:
    if server is None:
        return []
    selector = {
        LABEL_DEPLOYMENT_ID: server["metadata"]["labels"][LABEL_DEPLOYMENT_ID],
        LABEL_COMPONENT: SERVER,
    }
    return await cluster.list("v1", "Pod", namespace, selector)


def _type_of(obj: Obj | None) -> tuple[str, str]:
    return ("", "") if obj is None else (obj["apiVersion"], obj["kind"])


def _find(objects: Sequence[Obj], kind: str, component: str | None) -> Obj | None:
    for obj in objects:
        labels = obj["metadata"].get("labels") or {}
        if obj["kind"] == kind and (component is None or labels.get(LABEL_COMPONENT) == component):
            return obj
    return None
