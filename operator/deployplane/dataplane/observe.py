"""What a rendered deployment looks like in the cluster: the rollout's verdict.

The agent reads what it applied (the agent-server Deployment and its pods, the
database's StatefulSet, the route) and `rollout` (pure) says what it means.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from deployplane.api.dataplane import ReportedDeploymentStatus, ReportedStatus, ServerRuntime
from deployplane.dataplane.kube import Cluster, ClusterError
from deployplane.dataplane.render import LABEL_COMPONENT, LABEL_DEPLOYMENT_ID, SERVER, Rendered
from deployplane.dataplane.rollout import (
    REVISION_ANNOTATION,
    Verdict,
    companions_verdict,
    database_ready,
    pod_states,
    rollout_verdict,
    route_waiting,
)
from deployplane.dataplane.vendorparts import route_of

__all__ = ["CRASH_LOG_LINES", "DISCARDED", "observe_rollout"]

Obj = dict[str, Any]

# How many of a crashed server's last log lines go to the deploy logs (a report holds
# 50 lines: the verdict, the pod states, then these, the server's last word last).
CRASH_LOG_LINES = 30
# Terminal colour and cursor sequences (the server's structlog colours its lines even
# into a pipe), and other control characters but tab: a deploy log line is plain text.
_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|[\x00-\x08\x0b-\x1f\x7f]")
# What langgraph-runtime-inmem logs when it cannot load its saved files at start (a
# class they name has moved or changed) and deletes them (its database.start_pool and
# checkpoint.InMemorySaver); read from the start of the new server's log.
DISCARDED = ("Unable to load cached data", "Failed to load cached data")
START_LOG_BYTES = 256 * 1024


async def observe_rollout(
    cluster: Cluster, rendered: Rendered, revision_id: str
) -> tuple[Verdict, ReportedDeploymentStatus]:
    """The rollout of `revision_id` as `rendered`, and the deployment status the
    database gives (READY, or AWAITING_DATABASE)."""
    server = _find(rendered.objects, "Deployment", SERVER)
    database = _find(rendered.objects, "StatefulSet", None)
    route = route_of(rendered.objects)
    # The queue workers and Redis, where the runtime has them (the in-memory one not).
    others = [o for o in rendered.objects if o["kind"] == "Deployment" and o is not server]
    (current, pods, statefulset, applied_route), companions = await asyncio.gather(
        asyncio.gather(
            _read(cluster, server, "apps/v1", "Deployment"),
            _server_pods(cluster, rendered.namespace, server),
            _read(cluster, database, "apps/v1", "StatefulSet"),
            _read(cluster, route, *_type_of(route)),
        ),
        asyncio.gather(*(_read(cluster, other, "apps/v1", "Deployment") for other in others)),
    )
    ready = database is None or database_ready(statefulset)
    db_status = (
        ReportedDeploymentStatus.READY if ready else ReportedDeploymentStatus.AWAITING_DATABASE
    )
    verdict = rollout_verdict(current, pods, revision_id, rendered.runtime)
    if verdict.status is ReportedStatus.DEPLOYED:
        verdict = companions_verdict(companions) or verdict
    if verdict.status is ReportedStatus.DEPLOYED and route is not None:
        waiting = route_waiting(applied_route)
        if waiting is not None:
            verdict = Verdict(ReportedStatus.DEPLOYING, waiting)
    log = await _crash_log(cluster, rendered.namespace, verdict.crashed)
    verdict = replace(verdict, lines=(*pod_states(pods), *log))
    if verdict.status is ReportedStatus.DEPLOYED and rendered.runtime is ServerRuntime.INMEM:
        verdict = await _discarded_state(cluster, rendered.namespace, pods, revision_id, verdict)
    return verdict, db_status


async def _discarded_state(
    cluster: Cluster, namespace: str, pods: Sequence[Obj], revision_id: str, verdict: Verdict
) -> Verdict:
    """The in-memory server's start, as its log tells it: a warning for each time it
    discarded its saved threads and runs (never silently)."""
    warnings: dict[str, None] = {}  # in order, each once
    lines: list[str] = []
    for pod in pods:
        meta = pod.get("metadata") or {}
        if (meta.get("annotations") or {}).get(REVISION_ANNOTATION) != revision_id:
            continue
        try:
            text = await cluster.pod_log(
                namespace, meta["name"], SERVER, previous=False, limit_bytes=START_LOG_BYTES
            )
        except ClusterError as exc:
            lines.append(f"{SERVER} log: not readable, its saved state unchecked ({exc})")
            continue
        for line in _ANSI.sub("", text).splitlines():
            if any(said in line for said in DISCARDED):
                said = (
                    "the server could not load its saved threads, runs, assistants and "
                    f"crons and deleted them ({meta['name']}): {line.strip()}"
                )
                warnings[said[:2000]] = None
    return replace(verdict, lines=(*verdict.lines, *lines), warnings=(*verdict.warnings, *warnings))


async def _crash_log(
    cluster: Cluster, namespace: str, crashed: tuple[str, str] | None
) -> list[str]:
    """The last lines the crashed container wrote (its previous run: the one that
    exited), as the kubelet keeps them (the pods/log API), each naming its container."""
    if crashed is None:
        return []
    pod, container = crashed
    try:
        text = await cluster.pod_log(namespace, pod, container, tail_lines=CRASH_LOG_LINES)
    except ClusterError as exc:
        return [f"{container} log: not readable ({exc})"]
    plain = _ANSI.sub("", text)
    lines = [line for line in plain.splitlines() if line.strip()][-CRASH_LOG_LINES:]
    if not lines:
        return [f"{container} log: (empty)"]
    return [f"{container} log: {line}" for line in lines]


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
