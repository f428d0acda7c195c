"""Status from the cluster: the pure mapping of rollout.py, table-tested."""

from __future__ import annotations

from typing import Any

import pytest

from deployplane.api.dataplane import ReportedStatus
from deployplane.dataplane.rollout import (
    RUN_AS_ROOT_HINT,
    Verdict,
    companions_verdict,
    database_ready,
    rollout_verdict,
    route_waiting,
)

Obj = dict[str, Any]
REV = "rev-2"


def deployment(
    *,
    revision: str = REV,
    generation: int = 2,
    replicas: int = 2,
    status: dict[str, Any] | None = None,
    conditions: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    return {
        "metadata": {"generation": generation},
        "spec": {
            "replicas": replicas,
            "template": {"metadata": {"annotations": {"deployplane.io/revision-id": revision}}},
        },
        "status": {**(status or {}), "conditions": conditions or []},
    }


ROLLED = {"observedGeneration": 2, "replicas": 2, "updatedReplicas": 2, "availableReplicas": 2}


def pod(revision: str = REV, **status: Any) -> dict[str, Any]:
    return {
        "metadata": {"annotations": {"deployplane.io/revision-id": revision}},
        "status": status,
    }


def waiting(reason: str) -> dict[str, Any]:
    return {"image": "reg/app:9", "state": {"waiting": {"reason": reason}}}


UNSCHEDULABLE = {
    "type": "PodScheduled",
    "status": "False",
    "reason": "Unschedulable",
    "message": "0/3 nodes are available",
}
# The scheduler's own words while a pod waits for its claim (kube-scheduler 1.36).
WAITING_FOR_CLAIM = {
    **UNSCHEDULABLE,
    "message": "0/1 nodes are available: pod has unbound immediate PersistentVolumeClaims. "
    "preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling.",
}
# The claim applied with the Deployment, not yet in the scheduler's cache (kube-scheduler
# 1.36's words, seen on the real node).
WAITING_FOR_UNSEEN_CLAIM = {
    **UNSCHEDULABLE,
    "message": '0/1 nodes are available: persistentvolumeclaim "app-16f156db-state" not found. '
    "not found",
}
WAITING_FOR_PREVIOUS_POD = {
    **UNSCHEDULABLE,
    "message": "0/1 nodes are available: 1 node has pod using PersistentVolumeClaim with the "
    "same name and ReadWriteOncePod access mode.",
}
DEADLINE = {
    "type": "Progressing",
    "status": "False",
    "reason": "ProgressDeadlineExceeded",
    "message": 'ReplicaSet "x" has timed out progressing.',
}

# The kubelet's words for an image that runs as root under runAsNonRoot (kubelet 1.36),
# and the ReplicaSet's for a pod a namespace's Pod Security admission refuses.
RUNS_AS_ROOT = (
    'container has runAsNonRoot and image will run as root (pod: "b-7d9_agents(1a2b)", '
    "container: agent-server)"
)
NAMED_USER = (
    "container has runAsNonRoot and image has non-numeric user (app), cannot verify user is "
    'non-root (pod: "b-7d9_agents(1a2b)", container: agent-server)'
)
REFUSED = {
    "type": "ReplicaFailure",
    "status": "True",
    "reason": "FailedCreate",
    "message": 'pods "b-7d9-x" is forbidden: violates PodSecurity "restricted:latest": '
    'allowPrivilegeEscalation != false (container "proxy" must set '
    "securityContext.allowPrivilegeEscalation=false)",
}
QUOTA = {**REFUSED, "message": 'pods "b-7d9-x" is forbidden: exceeded quota: pods'}


def config_error(message: str) -> dict[str, Any]:
    return {"state": {"waiting": {"reason": "CreateContainerConfigError", "message": message}}}


CASES: list[tuple[str, dict[str, Any] | None, list[dict[str, Any]], Verdict]] = [
    (
        "not created",
        None,
        [],
        Verdict(ReportedStatus.DEPLOYING, "the agent-server Deployment is not created yet"),
    ),
    (
        "older revision's template",
        deployment(revision="rev-1", status=ROLLED),
        [],
        Verdict(ReportedStatus.DEPLOYING, "the revision is not applied yet"),
    ),
    ("rolled out", deployment(status=ROLLED), [], Verdict(ReportedStatus.DEPLOYED)),
    (
        "controller has not seen the new generation",
        deployment(status={**ROLLED, "observedGeneration": 1}),
        [],
        Verdict(ReportedStatus.DEPLOYING, "2 of 2 replicas updated, 2 available"),
    ),
    (
        "old pods still running",
        deployment(status={**ROLLED, "replicas": 3}),
        [],
        Verdict(ReportedStatus.DEPLOYING, "2 of 2 replicas updated, 2 available"),
    ),
    (
        "not all available",
        deployment(status={**ROLLED, "availableReplicas": 1}),
        [],
        Verdict(ReportedStatus.DEPLOYING, "2 of 2 replicas updated, 1 available"),
    ),
    (
        "scaled to zero",
        deployment(replicas=0, status={"observedGeneration": 2}),
        [],
        Verdict(ReportedStatus.DEPLOYED),
    ),
    (
        "progress deadline exceeded",
        deployment(status={"observedGeneration": 2}, conditions=[DEADLINE]),
        [],
        Verdict(
            ReportedStatus.DEPLOY_FAILED,
            'ProgressDeadlineExceeded: ReplicaSet "x" has timed out progressing.',
        ),
    ),
    (
        "image pull back-off",
        deployment(status={"observedGeneration": 2}),
        [pod(containerStatuses=[waiting("ImagePullBackOff")])],
        Verdict(ReportedStatus.DEPLOY_FAILED, "ImagePullBackOff: reg/app:9 cannot be pulled"),
    ),
    (
        "err image pull in an init container",
        deployment(status={"observedGeneration": 2}),
        [pod(initContainerStatuses=[waiting("ErrImagePull")])],
        Verdict(ReportedStatus.DEPLOY_FAILED, "ErrImagePull: reg/app:9 cannot be pulled"),
    ),
    (
        "unschedulable",
        deployment(status={"observedGeneration": 2}),
        [pod(conditions=[UNSCHEDULABLE])],
        Verdict(ReportedStatus.DEPLOY_FAILED, "Unschedulable: 0/3 nodes are available"),
    ),
    (
        "a pod waiting for its claim to be bound is not a failure",
        deployment(status={"observedGeneration": 2}),
        [pod(conditions=[WAITING_FOR_CLAIM])],
        Verdict(ReportedStatus.DEPLOYING, "0 of 2 replicas updated, 0 available"),
    ),
    (
        "a pod whose claim the scheduler has not seen yet is not a failure",
        deployment(status={"observedGeneration": 2}),
        [pod(conditions=[WAITING_FOR_UNSEEN_CLAIM])],
        Verdict(ReportedStatus.DEPLOYING, "0 of 2 replicas updated, 0 available"),
    ),
    (
        "a pod waiting for the previous pod of its ReadWriteOncePod claim is not a failure",
        deployment(status={"observedGeneration": 2}),
        [pod(conditions=[WAITING_FOR_PREVIOUS_POD])],
        Verdict(ReportedStatus.DEPLOYING, "0 of 2 replicas updated, 0 available"),
    ),
    (
        "an old revision's failing pod does not fail the new one",
        deployment(status=ROLLED),
        [pod("rev-1", containerStatuses=[waiting("ImagePullBackOff")])],
        Verdict(ReportedStatus.DEPLOYED),
    ),
    (
        "an image that runs as root under runAsNonRoot",
        deployment(status={"observedGeneration": 2}),
        [pod(containerStatuses=[config_error(RUNS_AS_ROOT)])],
        Verdict(
            ReportedStatus.DEPLOY_FAILED,
            f"CreateContainerConfigError: {RUNS_AS_ROOT}: {RUN_AS_ROOT_HINT}",
        ),
    ),
    (
        "an image that names its user by name under runAsNonRoot",
        deployment(status={"observedGeneration": 2}),
        [pod(containerStatuses=[config_error(NAMED_USER)])],
        Verdict(
            ReportedStatus.DEPLOY_FAILED,
            f"CreateContainerConfigError: {NAMED_USER}: {RUN_AS_ROOT_HINT}",
        ),
    ),
    (
        "a config error a wait may fix (a Secret's key to come) is not a failure",
        deployment(status={"observedGeneration": 2}),
        [pod(containerStatuses=[config_error('secret "s" not found')])],
        Verdict(ReportedStatus.DEPLOYING, "0 of 2 replicas updated, 0 available"),
    ),
    (
        "pods refused by the namespace's Pod Security admission",
        deployment(status={"observedGeneration": 2}, conditions=[REFUSED]),
        [],
        Verdict(ReportedStatus.DEPLOY_FAILED, f"FailedCreate: {REFUSED['message']}"),
    ),
    (
        "pods refused by a quota may come once it frees",
        deployment(status={"observedGeneration": 2}, conditions=[QUOTA]),
        [],
        Verdict(ReportedStatus.DEPLOYING, "0 of 2 replicas updated, 0 available"),
    ),
    (
        "rolled out at the count an autoscaler holds",
        deployment(
            replicas=4,
            status={**ROLLED, "replicas": 4, "updatedReplicas": 4, "availableReplicas": 4},
        ),
        [],
        Verdict(ReportedStatus.DEPLOYED),
    ),
    (
        "a container still creating is not a failure",
        deployment(status={"observedGeneration": 2}),
        [pod(containerStatuses=[waiting("ContainerCreating")])],
        Verdict(ReportedStatus.DEPLOYING, "0 of 2 replicas updated, 0 available"),
    ),
]


@pytest.mark.parametrize(("case", "current", "pods", "want"), CASES, ids=[c[0] for c in CASES])
def test_rollout_verdict(
    case: str, current: dict[str, Any] | None, pods: list[dict[str, Any]], want: Verdict
) -> None:
    assert rollout_verdict(current, pods, REV) == want


def statefulset(ready: int, *, observed: int = 1, replicas: int = 1) -> dict[str, Any]:
    return {
        "metadata": {"generation": 1},
        "spec": {"replicas": replicas},
        "status": {"observedGeneration": observed, "readyReplicas": ready},
    }


@pytest.mark.parametrize(
    ("case", "obj", "want"),
    [
        ("no database rendered", None, True),
        ("ready", statefulset(1), True),
        ("pod not ready", statefulset(0), False),
        ("new spec not observed", statefulset(1, observed=0), False),
        ("one of two ready", statefulset(1, replicas=2), False),
    ],
)
def test_database_ready(case: str, obj: dict[str, Any] | None, want: bool) -> None:
    assert database_ready(obj) is want


# --------------------------------------------------------------------------- routes


def _route(kind: str, status: dict[str, Any] | None = None, generation: int = 2) -> Obj:
    return {
        "kind": kind,
        "metadata": {"generation": generation},
        "spec": {"parentRefs": [{"name": "public", "namespace": "infra"}]},
        "status": status or {},
    }


def _parent(accepted: str = "True", resolved: str = "True", generation: int = 2) -> Obj:
    conditions = [
        {"type": "Accepted", "status": accepted, "observedGeneration": generation},
        {"type": "ResolvedRefs", "status": resolved, "observedGeneration": generation},
    ]
    return {"parents": [{"parentRef": {"name": "public"}, "conditions": conditions}]}


@pytest.mark.parametrize(
    ("route", "admitted"),
    [
        (None, True),
        (_route("Ingress"), False),
        (_route("Ingress", {"loadBalancer": {"ingress": [{}]}}), False),
        (_route("Ingress", {"loadBalancer": {"ingress": [{"ip": "192.0.2.1"}]}}), True),
        (_route("Ingress", {"loadBalancer": {"ingress": [{"hostname": "lb.example"}]}}), True),
        (_route("HTTPRoute"), False),
        (_route("HTTPRoute", _parent()), True),
        (_route("HTTPRoute", _parent(accepted="False")), False),
        (_route("HTTPRoute", _parent(resolved="False")), False),
        # Admitted for an older generation (the path changed since): not yet.
        (_route("HTTPRoute", _parent(generation=1)), False),
    ],
)
def test_route_waiting(route: Obj | None, admitted: bool) -> None:
    assert (route_waiting(route) is None) is admitted


def _named(name: str, **kwargs: Any) -> Obj:
    obj = deployment(**kwargs)
    obj["metadata"]["name"] = name
    return obj


@pytest.mark.parametrize(
    ("case", "others", "want"),
    [
        ("none rendered", [], None),
        (
            "all rolled out",
            [_named("b-queue", status=ROLLED), _named("b-redis", status=ROLLED)],
            None,
        ),
        (
            "redis not available yet",
            [
                _named("b-queue", status=ROLLED),
                _named("b-redis", status={**ROLLED, "availableReplicas": 1}),
            ],
            Verdict(
                ReportedStatus.DEPLOYING,
                "Deployment b-redis: 2 of 2 replicas updated, 1 available",
            ),
        ),
        (
            "an old queue worker left",
            [_named("b-queue", status={**ROLLED, "replicas": 3})],
            Verdict(
                ReportedStatus.DEPLOYING,
                "Deployment b-queue: 2 of 2 replicas updated, 2 available",
            ),
        ),
        (
            "not created yet",
            [None],
            Verdict(ReportedStatus.DEPLOYING, "a Deployment is not created yet"),
        ),
        (
            "past its progress deadline",
            [_named("b-redis", status={}, conditions=[DEADLINE])],
            Verdict(
                ReportedStatus.DEPLOY_FAILED,
                "Deployment b-redis: ProgressDeadlineExceeded: "
                'ReplicaSet "x" has timed out progressing.',
            ),
        ),
        (
            "its pods refused by the namespace's Pod Security admission",
            [_named("b-queue", status={}, conditions=[REFUSED])],
            Verdict(
                ReportedStatus.DEPLOY_FAILED,
                f"Deployment b-queue: FailedCreate: {REFUSED['message']}",
            ),
        ),
        (
            "scaled to zero (KEDA)",
            [_named("b-queue", replicas=0, status={"observedGeneration": 2})],
            None,
        ),
    ],
)
def test_companions_verdict(case: str, others: list[Obj | None], want: Verdict | None) -> None:
    assert companions_verdict(others) == want, case
