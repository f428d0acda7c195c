"""Deployment + revision + listener -> the Kubernetes objects of one agent server.

A pure function: no I/O, no clock, no randomness. The same input gives equal objects,
so a second server-side apply of the same revision changes nothing. Values the API
never returns (secret values, the database password) are explicit arguments: the agent
gets them from its own private source and the renderer stays a function of its input.

Every object but the owner carries an ownerReference to the owner ConfigMap whose uid
is a placeholder: the uid exists only once the owner has been applied, so the agent
applies `Rendered.owner` first and then `with_owner(rendered.objects, uid)`. Deleting
the owner then garbage-collects everything else (StatefulSet PVCs included, through
the StatefulSet's `whenDeleted: Delete` retention policy).

`FIELD_MAP` says what each ResourceSpec field becomes; docs/dataplane.md prints it and
a unit test checks that no field of the model or the published contract is missing.
"""

from __future__ import annotations

import base64
import copy
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from deployplane.api.models import Container, Deployment, Listener, ResourceSpec, Revision

__all__ = [
    "ANNOTATION_REVISION_ID",
    "DATABASE",
    "FIELD_MAP",
    "LABEL_COMPONENT",
    "LABEL_DEPLOYMENT_ID",
    "LABEL_LISTENER_ID",
    "OWNER_UID_PLACEHOLDER",
    "QUEUE",
    "REDIS",
    "SERVER",
    "RenderError",
    "Rendered",
    "base_name",
    "database_secret_name",
    "namespace_for",
    "render",
    "with_owner",
]

Obj = dict[str, Any]

LABEL_DEPLOYMENT_ID = "deployplane.io/deployment-id"
LABEL_LISTENER_ID = "deployplane.io/listener-id"
LABEL_COMPONENT = "app.kubernetes.io/component"
LABEL_NAME = "app.kubernetes.io/name"
LABEL_MANAGED_BY = "app.kubernetes.io/managed-by"
MANAGED_BY = "deployplane-listener"
ANNOTATION_REVISION_ID = "deployplane.io/revision-id"
# Filled in by `with_owner`; an empty uid is refused by the apiserver, so an object
# applied without it fails loudly instead of being orphaned.
OWNER_UID_PLACEHOLDER = ""

SERVER = "agent-server"
QUEUE = "queue"
REDIS = "redis"
DATABASE = "database"

SERVER_PORT = 8000
REDIS_PORT = 6379
POSTGRES_PORT = 5432
REDIS_IMAGE = "redis:7.4-alpine"
POSTGRES_IMAGE = "postgres:16-alpine"
DEFAULT_DB_STORAGE_GI = 1
DEFAULT_PROGRESS_DEADLINE_SECONDS = 600
HPA_CPU_UTILIZATION = 80
REDIS_MAXMEMORY_BYTES_PER_MB = 900_000  # 90 % of a megabyte
REVISION_HISTORY_LIMIT = 3
DB_PASSWORD_ENV = "DATABASE_PASSWORD"
# Environment the renderer sets itself; a user secret of the same name is refused.
RESERVED_ENV = frozenset({DB_PASSWORD_ENV, "DATABASE_URI", "REDIS_URI", "DEPLOYPLANE_COMPONENT"})

# Kubernetes object names: a DNS-1035 label for Services (<= 63, starts with a letter).
# The base name leaves room for the longest suffix ("-secrets") and for the
# StatefulSet's pod and controller-revision names.
_MAX_SLUG = 36
_NOT_NAME = re.compile(r"[^a-z0-9]+")
_SECRET_KEY = re.compile(r"^[-._a-zA-Z0-9]+$")

FIELD_MAP: dict[str, str] = {
    "min_scale": "agent-server Deployment `replicas` (default 1); HPA `minReplicas`",
    "max_scale": "HPA `maxReplicas` (no HPA when unset or when min_scale is 0)",
    "cpu": "agent-server container `requests.cpu` (cores)",
    "cpu_limit": "agent-server container `limits.cpu` (cores)",
    "memory_mb": "agent-server container `requests.memory` (megabytes, suffix M)",
    "memory_limit_mb": "agent-server container `limits.memory` (megabytes, suffix M)",
    "queue_min_scale": "queue Deployment `replicas` (default 1); queue HPA `minReplicas`",
    "queue_max_scale": "queue HPA `maxReplicas` (no HPA when unset)",
    "queue_cpu": "queue container `requests.cpu`",
    "queue_cpu_limit": "queue container `limits.cpu`",
    "queue_memory_mb": "queue container `requests.memory`",
    "queue_memory_limit_mb": "queue container `limits.memory`",
    "orchestrator_cpu": "not rendered: the orchestrator is the service's own component",
    "orchestrator_cpu_limit": "not rendered (orchestrator)",
    "orchestrator_memory_mb": "not rendered (orchestrator)",
    "orchestrator_memory_limit_mb": "not rendered (orchestrator)",
    "orchestrator_min_scale": "not rendered (orchestrator)",
    "orchestrator_max_scale": "not rendered (orchestrator)",
    "executor_cpu": "not rendered: the executor is the service's own component",
    "executor_cpu_limit": "not rendered (executor)",
    "executor_memory_mb": "not rendered (executor)",
    "executor_memory_limit_mb": "not rendered (executor)",
    "redis_cpu": "redis container `requests.cpu`",
    "redis_cpu_limit": "redis container `limits.cpu`",
    "redis_memory_mb": "redis container `requests.memory`; `--maxmemory` 90 % of it",
    "redis_memory_limit_mb": "redis container `limits.memory` (default: redis_memory_mb)",
    "labels": "labels of the agent-server and queue Deployments and their pods",
    "annotations": "annotations of the agent-server and queue Deployments and their pods",
    "service_account_name": "`serviceAccountName` of the agent-server and queue pods",
    "image_pull_secrets": "`imagePullSecrets` of the agent-server and queue pods",
    "volumes": "`volumes` of the agent-server and queue pods",
    "volume_mounts": "`volumeMounts` of the agent-server and queue containers",
    "init_containers": "`initContainers` of the agent-server and queue pods",
    "sidecars": "extra `containers` after the main one in the agent-server and queue pods",
    "db_cpu": "PostgreSQL container `requests.cpu`",
    "db_cpu_limit": "PostgreSQL container `limits.cpu`",
    "db_memory_mb": "PostgreSQL container `requests.memory`",
    "db_memory_limit_mb": "PostgreSQL container `limits.memory`",
    "db_storage_gi": "PostgreSQL PVC (volumeClaimTemplate) `requests.storage` in Gi (default 1)",
    "db_max_connections": "PostgreSQL `-c max_connections=N`",
}


class RenderError(ValueError):
    """The deployment cannot be rendered; the message is one sentence, never a value."""


@dataclass(frozen=True)
class Rendered:
    """What the agent applies: `owner` first, then `with_owner(objects, owner_uid)`."""

    namespace: str
    owner: Obj
    objects: list[Obj]

    def __repr__(self) -> str:
        # Secrets are among the objects: name them, never print them.
        names = ", ".join(f"{o['kind']}/{o['metadata']['name']}" for o in self.objects)
        owner = self.owner["metadata"]["name"]
        return f"Rendered(namespace={self.namespace!r}, owner={owner!r}, objects=[{names}])"

    __str__ = __repr__


def with_owner(objects: Sequence[Obj], owner_uid: str) -> list[Obj]:
    """Copies of `objects` whose owner placeholder carries the owner's uid."""
    if not owner_uid:
        raise ValueError("owner_uid is empty: apply the owner first and pass its metadata.uid")
    result = []
    for obj in objects:
        filled = copy.deepcopy(obj)
        for ref in filled["metadata"].get("ownerReferences", []):
            if ref.get("uid") == OWNER_UID_PLACEHOLDER:
                ref["uid"] = owner_uid
        result.append(filled)
    return result


def render(
    deployment: Deployment,
    revision: Revision,
    listener: Listener,
    image: str,
    *,
    secret_values: Mapping[str, str],
    database_password: str,
    progress_deadline_seconds: int = DEFAULT_PROGRESS_DEADLINE_SECONDS,
) -> Rendered:
    """Every object of `deployment` at `revision`, in the namespace it must run in.

    `image` is what the agent deploys (the revision's `image_uri`, or the build output
    for `git_host`). `secret_values` holds the value of each secret the deployment
    names (the API returns names only); `database_password` is the PostgreSQL
    password. Raises `RenderError` when the input cannot make valid objects.
    """
    if not image:
        raise RenderError(f"revision {revision.id} has no image to deploy")
    ctx = _Context.of(deployment, revision, listener, image, progress_deadline_seconds)
    env = _app_env(deployment, ctx, secret_values)
    objects: list[Obj] = [
        _user_secrets(ctx, deployment, secret_values),
        _db_secret(ctx, database_password),
        *_server(ctx, env),
        *_queue(ctx, env),
        *_redis(ctx),
        *_database(ctx),
    ]
    return Rendered(namespace=ctx.namespace, owner=_owner(ctx), objects=objects)


# --------------------------------------------------------------------------- context


@dataclass(frozen=True)
class _Context:
    """What every object builder needs, resolved and checked once."""

    namespace: str
    base: str
    deployment_id: str
    listener_id: str
    revision_id: str
    deployment_name: str
    image: str
    spec: ResourceSpec
    progress_deadline_seconds: int

    @classmethod
    def of(
        cls,
        deployment: Deployment,
        revision: Revision,
        listener: Listener,
        image: str,
        progress_deadline_seconds: int,
    ) -> _Context:
        source_config = deployment.source_config
        spec = (source_config.resource_spec if source_config else None) or ResourceSpec()
        return cls(
            namespace=_namespace(deployment, listener),
            base=base_name(deployment),
            deployment_id=str(deployment.id),
            listener_id=str(listener.id),
            revision_id=str(revision.id),
            deployment_name=deployment.name,
            image=image,
            spec=spec,
            progress_deadline_seconds=progress_deadline_seconds,
        )

    def name(self, component: str) -> str:
        suffix = {SERVER: "", QUEUE: "-queue", REDIS: "-redis", DATABASE: "-db"}[component]
        return self.base + suffix

    def labels(self, component: str | None = None) -> dict[str, str]:
        labels = {
            LABEL_NAME: self.base,
            LABEL_MANAGED_BY: MANAGED_BY,
            LABEL_DEPLOYMENT_ID: self.deployment_id,
            LABEL_LISTENER_ID: self.listener_id,
        }
        if component is not None:
            labels[LABEL_COMPONENT] = component
        return labels

    def selector(self, component: str) -> dict[str, str]:
        # Immutable once applied: only values that never change for a deployment.
        return {LABEL_DEPLOYMENT_ID: self.deployment_id, LABEL_COMPONENT: component}

    def metadata(self, name: str, component: str | None) -> Obj:
        return {
            "name": name,
            "namespace": self.namespace,
            "labels": self.labels(component),
            "ownerReferences": [
                {
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "name": self.base,
                    "uid": OWNER_UID_PLACEHOLDER,
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        }


def namespace_for(deployment: Deployment, listener: Listener) -> str:
    """The namespace `render` would use, without rendering: what an agent needs to
    read its private inputs (the database password's Secret) before rendering."""
    return _namespace(deployment, listener)


def database_secret_name(deployment: Deployment) -> str:
    """The Secret (key `password`) holding the deployment's PostgreSQL password."""
    return f"{base_name(deployment)}-db"


def _namespace(deployment: Deployment, listener: Listener) -> str:
    """`listener_config.k8s_namespace`, which must be one of the listener's namespaces.

    Unset, it is the listener's first namespace: the agent's Roles exist only in the
    listener's namespaces, so no other default could ever be deployed to.
    """
    compute_config = listener.compute_config
    allowed = list((compute_config.k8s_namespaces if compute_config else None) or [])
    listener_config = deployment.source_config.listener_config if deployment.source_config else None
    wanted = listener_config.k8s_namespace if listener_config else None
    if not allowed:
        raise RenderError(f"listener {listener.id} has no k8s_namespaces to deploy into")
    if wanted is None:
        return allowed[0]
    if wanted not in allowed:
        raise RenderError(
            f"namespace {wanted} is not one of listener {listener.id}'s namespaces: "
            + ", ".join(allowed)
        )
    return wanted


def base_name(deployment: Deployment) -> str:
    """A valid, stable object name: the deployment's name as a slug plus 8 id digits.

    The id part keeps two deployments whose names slug alike (`My App`, `my-app`)
    apart; the name part keeps `kubectl get` readable.
    """
    slug = _NOT_NAME.sub("-", deployment.name.lower()).strip("-")[:_MAX_SLUG].strip("-")
    if not slug or not slug[0].isalpha():
        slug = "d-" + slug if slug else "d"
    return f"{slug}-{deployment.id.hex[:8]}"


# --------------------------------------------------------------------------- owner


def _owner(ctx: _Context) -> Obj:
    """One ConfigMap per deployment: every other object is its dependent."""
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": ctx.base, "namespace": ctx.namespace, "labels": ctx.labels()},
        "data": {
            "deployment-id": ctx.deployment_id,
            "deployment-name": ctx.deployment_name,
            "listener-id": ctx.listener_id,
            "revision-id": ctx.revision_id,
        },
    }


# --------------------------------------------------------------------------- quantities


def _number(value: float | None, field: str) -> float | None:
    if value is None:
        return None
    if value < 0:
        raise RenderError(f"resource_spec.{field} must not be negative")
    return float(value)


def _count(value: float | None, field: str, default: int) -> int:
    number = _number(value, field)
    if number is None:
        return default
    if not number.is_integer():
        raise RenderError(f"resource_spec.{field} must be a whole number")
    return int(number)


def cpu_quantity(cores: float) -> str:
    """Cores as a Kubernetes quantity in canonical form: 0.5 -> 500m, 2 -> 2."""
    millicores = round(cores * 1000)
    return str(millicores // 1000) if millicores % 1000 == 0 else f"{millicores}m"


def memory_quantity(megabytes: float) -> str:
    """`_mb` is megabytes (10^6 bytes, the spec's word), so the suffix is M, not Mi."""
    if float(megabytes).is_integer():
        return f"{int(megabytes)}M"
    return f"{round(megabytes * 1000)}k"


def _resources(spec: ResourceSpec, prefix: str) -> Obj:
    """requests/limits from `<prefix>cpu`, `<prefix>cpu_limit`, `<prefix>memory_mb`..."""
    requests: dict[str, str] = {}
    limits: dict[str, str] = {}
    for field, target, to_quantity in (
        ("cpu", requests, cpu_quantity),
        ("cpu_limit", limits, cpu_quantity),
        ("memory_mb", requests, memory_quantity),
        ("memory_limit_mb", limits, memory_quantity),
    ):
        name = prefix + field
        value = _number(_spec_value(spec, name), name)
        if value is not None:
            target["cpu" if field.startswith("cpu") else "memory"] = to_quantity(value)
    resources: Obj = {}
    if requests:
        resources["requests"] = requests
    if limits:
        resources["limits"] = limits
    return resources


def _spec_value(spec: ResourceSpec, name: str) -> Any:
    # Fields of the published contract our model may not have yet (redis_cpu, ...) read
    # as unset rather than failing: the map covers them once the model does.
    return getattr(spec, name, None)


# --------------------------------------------------------------------------- env and secrets


def _b64(value: str) -> str:
    return base64.b64encode(value.encode()).decode()


def _user_secrets(ctx: _Context, deployment: Deployment, values: Mapping[str, str]) -> Obj:
    names = sorted({s.name for s in deployment.secrets or []})
    missing = [n for n in names if n not in values]
    if missing:
        raise RenderError(f"secret {missing[0]} has no value for deployment {ctx.deployment_id}")
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": ctx.metadata(f"{ctx.base}-secrets", SERVER),
        "type": "Opaque",
        "data": {n: _b64(values[n]) for n in names},
    }


def _db_secret(ctx: _Context, password: str) -> Obj:
    if not password:
        raise RenderError(f"deployment {ctx.deployment_id} needs a database password")
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": ctx.metadata(f"{ctx.base}-db", DATABASE),  # database_secret_name
        "type": "Opaque",
        "data": {"password": _b64(password)},
    }


def _secret_env(name: str, secret: str, key: str) -> Obj:
    return {"name": name, "valueFrom": {"secretKeyRef": {"name": secret, "key": key}}}


def _secret_references(deployment: Deployment) -> list[tuple[str, str, str]]:
    """(env name, Secret name, key) of each `secret_references` entry, if the model has them."""
    refs = getattr(deployment, "secret_references", None) or []
    return sorted((_ref(r, "name"), _ref(r, "secret_name"), _ref(r, "secret_key")) for r in refs)


def _ref(ref: Any, key: str) -> str:
    value = ref.get(key) if isinstance(ref, Mapping) else getattr(ref, key, None)
    if not value:
        raise RenderError(f"a secret_references entry has no {key}")
    return str(value)


def _app_env(deployment: Deployment, ctx: _Context, values: Mapping[str, str]) -> list[Obj]:
    """Environment shared by the agent server and the queue workers (sorted: stable)."""
    env: list[Obj] = []
    seen: set[str] = set()

    def add(entry: Obj, origin: str) -> None:
        name = entry["name"]
        if name in RESERVED_ENV:
            raise RenderError(f"{origin} {name} clashes with a variable the data plane sets")
        if name in seen:
            raise RenderError(f"environment variable {name} is set twice ({origin})")
        seen.add(name)
        env.append(entry)

    for name in sorted({s.name for s in deployment.secrets or []}):
        if not _SECRET_KEY.match(name):
            raise RenderError(f"secret name {name!r} is not a valid Kubernetes Secret key")
        add(_secret_env(name, f"{ctx.base}-secrets", name), "secret")
    for name, secret, key in _secret_references(deployment):
        add(_secret_env(name, secret, key), "secret_references entry")
    db_host = f"{ctx.name(DATABASE)}:{POSTGRES_PORT}"
    env += [
        _secret_env(DB_PASSWORD_ENV, f"{ctx.base}-db", "password"),
        # $(VAR) is expanded by the kubelet: the password never appears in the object.
        {
            "name": "DATABASE_URI",
            "value": f"postgres://postgres:$({DB_PASSWORD_ENV})@{db_host}/postgres?sslmode=disable",
        },
        {"name": "REDIS_URI", "value": f"redis://{ctx.name(REDIS)}:{REDIS_PORT}"},
    ]
    return env


# --------------------------------------------------------------------------- pods


def _string_map(value: Mapping[str, Any] | None, field: str) -> dict[str, str]:
    result: dict[str, str] = {}
    for key, item in (value or {}).items():
        if not isinstance(item, str):
            raise RenderError(f"resource_spec.{field}.{key} must be a string")
        result[key] = item
    return result


def _containers(items: Sequence[Container] | None, field: str) -> list[Obj]:
    dumped = []
    for index, container in enumerate(items or []):
        if not container.name or not container.image:
            raise RenderError(f"resource_spec.{field}[{index}] needs a name and an image")
        dumped.append(container.model_dump(exclude_none=True))
    return dumped


def _pod_spec(ctx: _Context, main: Obj) -> Obj:
    spec = ctx.spec
    pod: Obj = {}
    if spec.service_account_name:
        pod["serviceAccountName"] = spec.service_account_name
    if spec.image_pull_secrets:
        pod["imagePullSecrets"] = [{"name": s.name} for s in spec.image_pull_secrets]
    init = _containers(spec.init_containers, "init_containers")
    if init:
        pod["initContainers"] = init
    if spec.volume_mounts:
        main["volumeMounts"] = [m.model_dump(exclude_none=True) for m in spec.volume_mounts]
    pod["containers"] = [main, *_containers(spec.sidecars, "sidecars")]
    if spec.volumes:
        pod["volumes"] = [v.model_dump(exclude_none=True) for v in spec.volumes]
    return pod


def _app_container(ctx: _Context, component: str, env: list[Obj], prefix: str) -> Obj:
    container: Obj = {
        "name": component,
        "image": ctx.image,
        "env": [*env, {"name": "DEPLOYPLANE_COMPONENT", "value": component}],
    }
    if component == SERVER:
        container["ports"] = [{"name": "http", "containerPort": SERVER_PORT, "protocol": "TCP"}]
        container["readinessProbe"] = {"httpGet": {"path": "/ok", "port": "http"}}
    resources = _resources(ctx.spec, prefix)
    if resources:
        container["resources"] = resources
    return container


def _app_deployment(ctx: _Context, component: str, replicas: int, env: list[Obj]) -> Obj:
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


def _hpa(ctx: _Context, component: str, minimum: int, maximum: int | None) -> list[Obj]:
    if maximum is None or minimum == 0:
        return []
    field = "max_scale" if component == SERVER else "queue_max_scale"
    if maximum < minimum:
        raise RenderError(f"resource_spec.{field} {maximum} is below the minimum {minimum}")
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


def _service(ctx: _Context, component: str, port: int, *, headless: bool = False) -> Obj:
    spec: Obj = {
        "selector": ctx.selector(component),
        "ports": [{"name": "tcp", "port": port, "targetPort": port, "protocol": "TCP"}],
    }
    if headless:
        spec["clusterIP"] = "None"
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": ctx.metadata(ctx.name(component), component),
        "spec": spec,
    }


def _server(ctx: _Context, env: list[Obj]) -> list[Obj]:
    replicas = _count(ctx.spec.min_scale, "min_scale", 1)
    maximum = ctx.spec.max_scale
    return [
        _app_deployment(ctx, SERVER, replicas, env),
        _service(ctx, SERVER, SERVER_PORT),
        *_hpa(ctx, SERVER, replicas, None if maximum is None else _count(maximum, "max_scale", 0)),
    ]


def _queue(ctx: _Context, env: list[Obj]) -> list[Obj]:
    replicas = _count(ctx.spec.queue_min_scale, "queue_min_scale", 1)
    maximum = ctx.spec.queue_max_scale
    return [
        _app_deployment(ctx, QUEUE, replicas, env),
        *_hpa(
            ctx, QUEUE, replicas, None if maximum is None else _count(maximum, "queue_max_scale", 0)
        ),
    ]


# --------------------------------------------------------------------------- redis and postgres


def _redis(ctx: _Context) -> list[Obj]:
    spec = ctx.spec
    memory = _number(spec.redis_memory_mb, "redis_memory_mb")
    container: Obj = {
        "name": REDIS,
        "image": REDIS_IMAGE,
        "ports": [{"name": "tcp", "containerPort": REDIS_PORT, "protocol": "TCP"}],
    }
    resources = _resources(spec, "redis_")
    if memory is not None:
        # Redis must evict before the kernel kills it: maxmemory bounds the data only,
        # so it leaves 10 % of the memory for the process itself. In bytes: Redis reads
        # "mb" as MiB, the spec's _mb is megabytes.
        maxmemory = str(round(memory * REDIS_MAXMEMORY_BYTES_PER_MB))
        container["args"] = ["--maxmemory", maxmemory, "--maxmemory-policy", "allkeys-lru"]
        resources.setdefault("limits", {}).setdefault("memory", memory_quantity(memory))
    if resources:
        container["resources"] = resources
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": ctx.metadata(ctx.name(REDIS), REDIS),
        "spec": {
            "replicas": 1,
            "revisionHistoryLimit": REVISION_HISTORY_LIMIT,
            "selector": {"matchLabels": ctx.selector(REDIS)},
            "template": {
                "metadata": {"labels": ctx.labels(REDIS)},
                "spec": {"containers": [container]},
            },
        },
    }
    return [deployment, _service(ctx, REDIS, REDIS_PORT)]


def _postgres_container(ctx: _Context) -> Obj:
    spec = ctx.spec
    container: Obj = {
        "name": "postgres",
        "image": POSTGRES_IMAGE,
        "ports": [{"name": "tcp", "containerPort": POSTGRES_PORT, "protocol": "TCP"}],
        "env": [
            _secret_env("POSTGRES_PASSWORD", f"{ctx.base}-db", "password"),
            # A subdirectory: the volume's root may hold lost+found, which initdb refuses.
            {"name": "PGDATA", "value": "/var/lib/postgresql/data/pgdata"},
        ],
        "volumeMounts": [{"name": "data", "mountPath": "/var/lib/postgresql/data"}],
        "readinessProbe": {"exec": {"command": ["pg_isready", "-U", "postgres"]}},
    }
    connections = spec.db_max_connections
    if connections is not None:
        count = _count(connections, "db_max_connections", 0)
        container["args"] = ["-c", f"max_connections={count}"]
    resources = _resources(spec, "db_")
    if resources:
        container["resources"] = resources
    return container


def _database(ctx: _Context) -> list[Obj]:
    storage = _count(ctx.spec.db_storage_gi, "db_storage_gi", DEFAULT_DB_STORAGE_GI)
    name = ctx.name(DATABASE)
    statefulset = {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": ctx.metadata(name, DATABASE),
        "spec": {
            "replicas": 1,
            "serviceName": name,
            "selector": {"matchLabels": ctx.selector(DATABASE)},
            # PVCs are owned by the StatefulSet, so deleting the owner removes the data too.
            "persistentVolumeClaimRetentionPolicy": {
                "whenDeleted": "Delete",
                "whenScaled": "Retain",
            },
            "template": {
                "metadata": {"labels": ctx.labels(DATABASE)},
                "spec": {"containers": [_postgres_container(ctx)]},
            },
            "volumeClaimTemplates": [
                {
                    "metadata": {"name": "data", "labels": ctx.labels(DATABASE)},
                    "spec": {
                        "accessModes": ["ReadWriteOnce"],
                        "resources": {"requests": {"storage": f"{storage}Gi"}},
                    },
                }
            ],
        },
    }
    return [statefulset, _service(ctx, DATABASE, POSTGRES_PORT, headless=True)]
