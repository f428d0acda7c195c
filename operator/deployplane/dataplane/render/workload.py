"""The agent server and the queue workers: their Deployments, pods and autoscalers.

Both run the deployment's image with the same pod shape and environment; the server
also gets a port, a readiness probe and a Service. The image is the user's, so its pods
keep the user it declares (security.py).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from deployplane.api.models import Container
from deployplane.dataplane.render.context import (
    ANNOTATION_REVISION_ID,
    QUEUE,
    SERVER,
    SERVER_PORT,
    Context,
)
from deployplane.dataplane.render.keda import scaled_object, trigger_authentication
from deployplane.dataplane.render.model import Obj, RenderError
from deployplane.dataplane.render.quantities import count, resources
from deployplane.dataplane.render.security import (
    container_context,
    user_pod_context,
    users_container,
)
from deployplane.dataplane.render.service import service
from deployplane.dataplane.render.settings import Autoscaler
from deployplane.dataplane.render.state import claim, keep_state

HPA_CPU_UTILIZATION = 80
REVISION_HISTORY_LIMIT = 3
# The server's own health route: `check_db=0` asks only whether it answers (liveness: is
# it stuck?), `check_db=1` whether its PostgreSQL and Redis answer too (readiness: can it
# serve now?). Explicit both ways: the queue entrypoint checks them unless told not to.
ALIVE_PATH = "/ok?check_db=0"
READY_PATH = "/ok?check_db=1"
STARTUP_PERIOD_SECONDS = 5


def server(ctx: Context, env: list[Obj]) -> list[Obj]:
    replicas = count(ctx.spec.min_scale, "min_scale", 1)
    maximum = ctx.spec.max_scale
    if ctx.in_memory:
        # Runs and threads live in the server's memory and its files (state.py): a
        # second replica would answer for other threads than the first and overwrite its
        # files, so one replica and no autoscaler, its state on the deployment's claim.
        replicas = min(replicas, 1)
        return [
            keep_state(ctx, _app_deployment(ctx, SERVER, replicas, env)),
            claim(ctx),
            service(ctx, SERVER, SERVER_PORT),
        ]
    return [
        _app_deployment(ctx, SERVER, replicas, env),
        service(ctx, SERVER, SERVER_PORT),
        *_hpa(ctx, SERVER, replicas, None if maximum is None else count(maximum, "max_scale", 0)),
    ]


def queue(ctx: Context, env: list[Obj]) -> list[Obj]:
    replicas = count(ctx.spec.queue_min_scale, "queue_min_scale", 1)
    maximum = ctx.spec.queue_max_scale
    limit = None if maximum is None else count(maximum, "queue_max_scale", 0)
    deployment = _app_deployment(ctx, QUEUE, replicas, env)
    if ctx.settings.autoscaler is Autoscaler.KEDA:
        if limit is None:
            return [deployment]
        _check_range(limit, replicas, "queue_max_scale")
        # KEDA scales from zero too, so a minimum of 0 still gets a ScaledObject.
        return [deployment, trigger_authentication(ctx), scaled_object(ctx, replicas, limit)]
    return [deployment, *_hpa(ctx, QUEUE, replicas, limit)]


def _check_range(maximum: int, minimum: int, field: str) -> None:
    if maximum < minimum:
        raise RenderError(f"resource_spec.{field} {maximum} is below the minimum {minimum}")


def _string_map(value: Mapping[str, Any] | None, field: str) -> dict[str, str]:
    result: dict[str, str] = {}
    for key, item in (value or {}).items():
        if not isinstance(item, str):
            raise RenderError(f"resource_spec.{field}.{key} must be a string")
        result[key] = item
    return result


def _containers(ctx: Context, items: Sequence[Container] | None, field: str) -> list[Obj]:
    dumped = []
    for index, container in enumerate(items or []):
        if not container.name or not container.image:
            raise RenderError(f"resource_spec.{field}[{index}] needs a name and an image")
        level = ctx.settings.pod_security
        dumped.append(users_container(container.model_dump(exclude_none=True), level))
    return dumped


def _pod_spec(ctx: Context, main: Obj) -> Obj:
    spec = ctx.spec
    pod: Obj = {"securityContext": user_pod_context(ctx.settings.pod_security)}
    if spec.service_account_name:
        pod["serviceAccountName"] = spec.service_account_name
    if spec.image_pull_secrets:
        pod["imagePullSecrets"] = [{"name": s.name} for s in spec.image_pull_secrets]
    init = _containers(ctx, spec.init_containers, "init_containers")
    if init:
        pod["initContainers"] = init
    if spec.volume_mounts:
        main["volumeMounts"] = [m.model_dump(exclude_none=True) for m in spec.volume_mounts]
    pod["containers"] = [main, *_containers(ctx, spec.sidecars, "sidecars")]
    if spec.volumes:
        pod["volumes"] = [v.model_dump(exclude_none=True) for v in spec.volumes]
    return pod


def _app_container(ctx: Context, component: str, env: list[Obj], prefix: str) -> Obj:
    container: Obj = {
        "name": component,
        "image": ctx.image,
        "env": [*env, {"name": "DEPLOYPLANE_COMPONENT", "value": component}],
    }
    # The server and the queue workers both serve /ok on the same port (one image).
    container["ports"] = [{"name": "http", "containerPort": SERVER_PORT, "protocol": "TCP"}]
    container.update(_probes(ctx))
    container["securityContext"] = container_context(ctx.settings.pod_security)
    container_resources = resources(ctx.spec, prefix)
    if container_resources:
        container["resources"] = container_resources
    return container


def _probes(ctx: Context) -> Obj:
    """Readiness on `/ok?check_db=1`, liveness on `/ok?check_db=0`: a database away makes
    the pods unready, never restarts them. A startup probe gives a slow first start the
    revision's whole progress deadline before liveness may restart the pod."""
    alive = {"httpGet": {"path": ALIVE_PATH, "port": "http"}}
    ready = {"httpGet": {"path": READY_PATH, "port": "http"}}
    startup_failures = max(1, -(-ctx.progress_deadline_seconds // STARTUP_PERIOD_SECONDS))
    return {
        "readinessProbe": {**ready, "periodSeconds": 10, "timeoutSeconds": 5},
        "livenessProbe": {**alive, "periodSeconds": 15, "timeoutSeconds": 5, "failureThreshold": 6},
        "startupProbe": {
            **alive,
            "periodSeconds": STARTUP_PERIOD_SECONDS,
            "failureThreshold": startup_failures,
        },
    }


def _app_deployment(ctx: Context, component: str, replicas: int, env: list[Obj]) -> Obj:
    """The agent server or the queue workers: same image, pod shape and environment."""
    prefix = "" if component == SERVER else "queue_"
    labels = {**_string_map(ctx.spec.labels, "labels"), **ctx.labels(component)}
    annotations = _string_map(ctx.spec.annotations, "annotations")
    metadata = ctx.metadata(ctx.name(component), component)
    metadata["labels"] = labels
    if annotations:
        metadata["annotations"] = annotations
    pod_annotations = {**annotations, ANNOTATION_REVISION_ID: ctx.revision_id}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": metadata,
        "spec": {
            "replicas": replicas,
            "revisionHistoryLimit": REVISION_HISTORY_LIMIT,
            "progressDeadlineSeconds": ctx.progress_deadline_seconds,
            "selector": {"matchLabels": ctx.selector(component)},
            "template": {
                "metadata": {"labels": labels, "annotations": pod_annotations},
                "spec": _pod_spec(ctx, _app_container(ctx, component, env, prefix)),
            },
        },
    }


def _hpa(ctx: Context, component: str, minimum: int, maximum: int | None) -> list[Obj]:
    if maximum is None or minimum == 0:
        return []
    _check_range(maximum, minimum, "max_scale" if component == SERVER else "queue_max_scale")
    name = ctx.name(component)
    return [
        {
            "apiVersion": "autoscaling/v2",
            "kind": "HorizontalPodAutoscaler",
            "metadata": ctx.metadata(name, component),
            "spec": {
                "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": name},
                "minReplicas": minimum,
                "maxReplicas": maximum,
                "metrics": [
                    {
                        "type": "Resource",
                        "resource": {
                            "name": "cpu",
                            "target": {
                                "type": "Utilization",
                                "averageUtilization": HPA_CPU_UTILIZATION,
                            },
                        },
                    }
                ],
            },
        }
    ]
