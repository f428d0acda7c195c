"""Status from the cluster: pure functions from Kubernetes objects to a revision status.

The agent reads the agent-server Deployment, its pods and the database StatefulSet,
and these functions say what that means for the revision (docs/dataplane.md, "How
status is derived"). No I/O here, so every rule is a table test.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from deployplane.api.dataplane import ReportedStatus, ServerRuntime

__all__ = [
    "CRASH_RESTARTS",
    "IMAGE_PULL_FAILURES",
    "REVISION_ANNOTATION",
    "Verdict",
    "companions_verdict",
    "database_ready",
    "rollout_verdict",
    "route_waiting",
]

Obj = Mapping[str, Any]

# Written by the renderer on the pod template: which revision a pod runs.
REVISION_ANNOTATION = "deployplane.io/revision-id"

# Container waiting reasons that no amount of waiting fixes.
IMAGE_PULL_FAILURES = frozenset(
    {"ErrImagePull", "ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull"}
)


# The kubelet's words when `runAsNonRoot` (render/security.py) meets an image that runs
# as root, or names its user by name: no wait fixes that image.
RUN_AS_ROOT = re.compile(r"runAsNonRoot and image (will run as root|has non-numeric user)")
RUN_AS_ROOT_HINT = (
    "the data plane runs the image as non-root (Pod Security restricted): give it a "
    "numeric non-root USER, or set the agent's pod security to baseline (docs/dataplane.md)"
)


# How often a container of the new revision may crash at start before the rollout
# fails: the in-memory server depends on nothing, so its first crash is its own (a
# graph that fails at import); the vendor's server may exit while its PostgreSQL or
# Redis still starts, so it gets a few restarts (kubelet's back-off: 10 s, 20 s, 40 s).
CRASH_RESTARTS = {ServerRuntime.INMEM: 1, ServerRuntime.POSTGRES: 3}


@dataclass(frozen=True)
class Verdict:
    """What the cluster says about one revision's rollout; `message` says why."""

    status: ReportedStatus
    message: str | None = None
    lines: tuple[str, ...] = ()  # pod states, shipped as deploy log lines
    # (pod, container) that crashed at start: its last log lines go to the deploy logs
    crashed: tuple[str, str] | None = None
    warnings: tuple[str, ...] = ()  # shipped as WARNING deploy log lines


def _get(obj: Obj | None, *path: str) -> Any:
    value: Any = obj
    for key in path:
        if not isinstance(value, Mapping):
            return None
        value = value.get(key)
    return value


def _revision_of(template_owner: Obj) -> Any:
    return _get(template_owner, "metadata", "annotations", REVISION_ANNOTATION)


def _cannot_progress(deployment: Obj) -> str | None:
    """Why the Deployment's rollout cannot go on: its progress deadline passed, or its
    pods are refused by the namespace's Pod Security admission (the ReplicaSet's
    FailedCreate, which no wait fixes); None while it may."""
    for condition in _get(deployment, "status", "conditions") or []:
        if condition.get("type") == "Progressing" and (
            condition.get("reason") == "ProgressDeadlineExceeded"
        ):
            return f"ProgressDeadlineExceeded: {condition.get('message') or 'no progress'}"
        message = str(condition.get("message") or "")
        if (
            condition.get("type") == "ReplicaFailure"
            and condition.get("status") == "True"
            and POD_SECURITY_REFUSAL in message
        ):
            return f"{condition.get('reason') or 'FailedCreate'}: {message}"
    return None


# The apiserver's words when a namespace's Pod Security admission refuses a pod.
POD_SECURITY_REFUSAL = "violates PodSecurity"


# The scheduler's words for a pod that waits for its claim rather than for a node: a
# claim the scheduler has not seen yet (the agent applies it with the Deployment, and the
# scheduler's cache of claims may lag the pod by a moment), a claim still being
# provisioned and bound, or a ReadWriteOncePod claim whose previous pod is still stopping
# (the in-memory server's, render/state.py). All pass; a claim that never comes or never
# binds fails the rollout at its progress deadline.
VOLUME_WAITS = (
    re.compile(r'persistentvolumeclaim "[^"]+" not found'),
    re.compile(r"pod has unbound immediate PersistentVolumeClaims"),
    re.compile(r"node has pod using PersistentVolumeClaim with the same name and ReadWriteOncePod"),
)


def _unschedulable(pod: Obj) -> str | None:
    for condition in _get(pod, "status", "conditions") or []:
        if (
            condition.get("type") == "PodScheduled"
            and condition.get("status") == "False"
            and condition.get("reason") == "Unschedulable"
        ):
            message = condition.get("message") or "no node fits the pod"
            if any(wait.search(message) for wait in VOLUME_WAITS):
                return None
            return f"Unschedulable: {message}"
    return None


def _crash(status: Obj, crash_restarts: int) -> str | None:
    """Why a container that keeps exiting at start fails the rollout, or None while
    it may still come up: in CrashLoopBackOff after `crash_restarts` restarts."""
    waiting = _get(status, "state", "waiting") or {}
    restarts = int(status.get("restartCount") or 0)
    if waiting.get("reason") != "CrashLoopBackOff" or restarts < crash_restarts:
        return None
    last = _get(status, "lastState", "terminated") or {}
    how = f"exit code {last.get('exitCode')}" if last.get("exitCode") is not None else "exited"
    if last.get("reason"):
        how += f", {last['reason']}"
    times = "once" if restarts == 1 else f"{restarts} times"
    return f"CrashLoopBackOff: container {status.get('name')} crashed at start {times} ({how})"


def _pod_failure(pod: Obj, crash_restarts: int) -> tuple[str, str | None] | None:
    """Why a pod of the new revision cannot run, and the container that crashed (whose
    log says why), or None while it still may."""
    unschedulable = _unschedulable(pod)
    if unschedulable is not None:
        return unschedulable, None
    statuses = [
        *(_get(pod, "status", "initContainerStatuses") or []),
        *(_get(pod, "status", "containerStatuses") or []),
    ]
    for status in statuses:
        waiting = _get(status, "state", "waiting") or {}
        reason = waiting.get("reason")
        if reason in IMAGE_PULL_FAILURES:
            image = status.get("image") or "the image"
            return f"{reason}: {image} cannot be pulled", None
        said = str(waiting.get("message") or "")
        if reason == "CreateContainerConfigError" and RUN_AS_ROOT.search(said):
            return f"{reason}: {said}: {RUN_AS_ROOT_HINT}", None
        crash = _crash(status, crash_restarts)
        if crash is not None:
            return crash, str(status.get("name"))
    return None


def rollout_verdict(
    deployment: Obj | None,
    pods: Sequence[Obj],
    revision_id: str,
    runtime: ServerRuntime = ServerRuntime.POSTGRES,
) -> Verdict:
    """The agent-server Deployment's rollout of `revision_id`.

    DEPLOYED once the Deployment controller has seen this revision's spec (observed
    generation) and every wanted replica (`spec.replicas` as the cluster has it: the
    autoscaler's count when one targets it) is updated and available (its readiness
    probe on `/ok` passed), with no old pod left; DEPLOY_FAILED when the progress
    deadline passed, the namespace's Pod Security admission refuses the pods, or a pod
    of this revision cannot be pulled or scheduled, may not run its image as non-root,
    or keeps crashing at start (`CRASH_RESTARTS` for the image's runtime); DEPLOYING
    otherwise.
    """
    if deployment is None:
        return Verdict(ReportedStatus.DEPLOYING, "the agent-server Deployment is not created yet")
    template = _get(deployment, "spec", "template") or {}
    if _revision_of(template) != revision_id:
        return Verdict(ReportedStatus.DEPLOYING, "the revision is not applied yet")
    deadline = _cannot_progress(deployment)
    if deadline is not None:
        return Verdict(ReportedStatus.DEPLOY_FAILED, deadline)
    for pod in pods:
        failure = (
            _pod_failure(pod, CRASH_RESTARTS[runtime]) if _revision_of(pod) == revision_id else None
        )
        if failure is not None:
            message, container = failure
            crashed = None if container is None else (str(_get(pod, "metadata", "name")), container)
            return Verdict(ReportedStatus.DEPLOY_FAILED, message, crashed=crashed)
    if _rolled_out(deployment):
        return Verdict(ReportedStatus.DEPLOYED)
    return Verdict(ReportedStatus.DEPLOYING, _progress(deployment))


def _wanted(deployment: Obj) -> int:
    wanted = _get(deployment, "spec", "replicas")
    return 1 if wanted is None else int(wanted)


def _rolled_out(deployment: Obj) -> bool:
    generation = _get(deployment, "metadata", "generation") or 0
    status = _get(deployment, "status") or {}
    wanted = _wanted(deployment)
    return bool(
        (status.get("observedGeneration") or 0) >= generation
        and (status.get("updatedReplicas") or 0) >= wanted
        and (status.get("availableReplicas") or 0) >= wanted
        and (status.get("replicas") or 0) <= (status.get("updatedReplicas") or 0)
    )


def _progress(deployment: Obj) -> str:
    status = _get(deployment, "status") or {}
    return (
        f"{status.get('updatedReplicas') or 0} of {_wanted(deployment)} replicas updated, "
        f"{status.get('availableReplicas') or 0} available"
    )


def companions_verdict(deployments: Sequence[Obj | None]) -> Verdict | None:
    """The rollout's other Deployments (queue workers, Redis), once the agent server's is
    rolled out: None when every one is rolled out too (its pods passed their readiness
    probes), DEPLOY_FAILED past a progress deadline or with its pods refused by the
    namespace's Pod Security admission, DEPLOYING otherwise."""
    for deployment in deployments:
        if deployment is None:
            return Verdict(ReportedStatus.DEPLOYING, "a Deployment is not created yet")
        name = _get(deployment, "metadata", "name")
        failure = _cannot_progress(deployment)
        if failure is not None:
            return Verdict(ReportedStatus.DEPLOY_FAILED, f"Deployment {name}: {failure}")
        if not _rolled_out(deployment):
            return Verdict(ReportedStatus.DEPLOYING, f"Deployment {name}: {_progress(deployment)}")
    return None


def pod_states(pods: Sequence[Obj]) -> list[str]:
    """One line per pod of the rollout (shipped as deploy log lines): its phase, ready
    containers, and why a waiting container waits."""
    lines = []
    for pod in pods:
        statuses = _get(pod, "status", "containerStatuses") or []
        ready = sum(1 for status in statuses if status.get("ready"))
        line = (
            f"pod {_get(pod, 'metadata', 'name')}: {_get(pod, 'status', 'phase') or 'Pending'}"
            f", {ready}/{len(statuses)} ready"
        )
        waiting = [
            reason
            for status in statuses
            if (reason := (_get(status, "state", "waiting") or {}).get("reason"))
        ]
        lines.append(line + (f" (waiting: {', '.join(waiting)})" if waiting else ""))
    return lines


def database_ready(statefulset: Obj | None) -> bool:
    """Whether the deployment's PostgreSQL StatefulSet serves: all replicas ready at the
    current spec. No StatefulSet (nothing rendered one) counts as ready."""
    if statefulset is None:
        return True
    generation = _get(statefulset, "metadata", "generation") or 0
    status = _get(statefulset, "status") or {}
    wanted = _get(statefulset, "spec", "replicas")
    wanted = 1 if wanted is None else wanted
    return bool(
        (status.get("observedGeneration") or 0) >= generation
        and (status.get("readyReplicas") or 0) >= wanted
    )


def _true(conditions: Sequence[Obj], kind: str, generation: int) -> bool:
    return any(
        c.get("type") == kind
        and c.get("status") == "True"
        and (c.get("observedGeneration") or generation) >= generation
        for c in conditions
    )


def route_waiting(route: Obj | None) -> str | None:
    """Why the deployment's route does not carry traffic yet, or None once admitted.

    An Ingress is admitted when its controller gave it an address
    (`status.loadBalancer.ingress`); an HTTPRoute when its Gateway's controller says
    `Accepted` and `ResolvedRefs` are True for this generation of the route, for the
    parent the route names. No route (none rendered) waits for nothing.
    """
    if route is None:
        return None
    kind = route.get("kind")
    if kind == "Ingress":
        addresses = _get(route, "status", "loadBalancer", "ingress") or []
        if any(a.get("ip") or a.get("hostname") for a in addresses):
            return None
        return "the Ingress has no address yet (is an ingress controller running?)"
    generation = _get(route, "metadata", "generation") or 0
    wanted = [ref.get("name") for ref in _get(route, "spec", "parentRefs") or []]
    for parent in _get(route, "status", "parents") or []:
        conditions = parent.get("conditions") or []
        if (_get(parent, "parentRef", "name") in wanted) and all(
            _true(conditions, c, generation) for c in ("Accepted", "ResolvedRefs")
        ):
            return None
    return "the HTTPRoute is not Accepted with ResolvedRefs by its Gateway yet"
