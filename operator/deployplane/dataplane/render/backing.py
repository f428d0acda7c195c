"""The deployment's own Redis (a Deployment) and PostgreSQL (a StatefulSet with a
volume claim), each with its Service.

Both run as a fixed non-root user on a read-only root filesystem, what they write on
volumes of their own: PostgreSQL its data on the claim, its socket and lock in
`/var/run/postgresql` and the entry script's temporary files in `/tmp`; Redis its
snapshot in `/data`.
"""

from __future__ import annotations

from deployplane.dataplane.render.context import (
    DATABASE,
    POSTGRES_PORT,
    REDIS,
    REDIS_PORT,
    Context,
)
from deployplane.dataplane.render.model import Obj
from deployplane.dataplane.render.quantities import count, memory_quantity, number, resources
from deployplane.dataplane.render.secrets import secret_env
from deployplane.dataplane.render.security import container_context, own_image_pod_context
from deployplane.dataplane.render.service import service
from deployplane.dataplane.render.settings import PodSecurity
from deployplane.dataplane.render.workload import REVISION_HISTORY_LIMIT

DEFAULT_DB_STORAGE_GI = 1
REDIS_MAXMEMORY_BYTES_PER_MB = 900_000  # 90 % of a megabyte
# The users and groups PostgreSQL and Redis run as, which our images have
# (tools/images/recipes.py). PostgreSQL's is the official image's `postgres` (999): that
# image, started as root by a render without a user, drops to 999, so every database it
# made is 999's, and PostgreSQL starts only as the owner of its data. Redis keeps nothing
# across pods, so its user is one above 10000, no user of a node; the official image
# runs as any user it is started as.
DATABASE_USER = 999
REDIS_USER = 10999
RUN_DIR_SIZE = "16Mi"


def redis(ctx: Context) -> list[Obj]:
    spec = ctx.spec
    memory = number(spec.redis_memory_mb, "redis_memory_mb")
    container: Obj = {
        "name": REDIS,
        # redis:7.4-alpine by default; a setting of the agent (DEPLOYPLANE_REDIS_IMAGE).
        "image": ctx.settings.redis_image,
        "ports": [{"name": "tcp", "containerPort": REDIS_PORT, "protocol": "TCP"}],
        # Ready once it answers: the image's own client, as for PostgreSQL's pg_isready.
        "readinessProbe": {"exec": {"command": ["redis-cli", "ping"]}},
        "securityContext": container_context(PodSecurity.RESTRICTED, read_only=True),
        # Its working directory, where it writes its snapshot.
        "volumeMounts": [{"name": "data", "mountPath": "/data"}],
    }
    container_resources = resources(spec, "redis_")
    if memory is not None:
        # Redis must evict before the kernel kills it: maxmemory bounds the data only,
        # so it leaves 10 % of the memory for the process itself. In bytes: Redis reads
        # "mb" as MiB, the spec's _mb is megabytes.
        maxmemory = str(round(memory * REDIS_MAXMEMORY_BYTES_PER_MB))
        container["args"] = ["--maxmemory", maxmemory, "--maxmemory-policy", "allkeys-lru"]
        container_resources.setdefault("limits", {}).setdefault("memory", memory_quantity(memory))
    if container_resources:
        container["resources"] = container_resources
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
                "spec": {
                    "securityContext": own_image_pod_context(REDIS_USER),
                    "containers": [container],
                    "volumes": [{"name": "data", "emptyDir": {}}],
                },
            },
        },
    }
    return [deployment, service(ctx, REDIS, REDIS_PORT)]


def _postgres_container(ctx: Context) -> Obj:
    spec = ctx.spec
    container: Obj = {
        "name": "postgres",
        # pgvector/pgvector:pg16 by default: the agent server's vector store needs the
        # extension (the vendor ships pgvector/pgvector:pg15); a setting of the agent.
        "image": ctx.settings.postgres_image,
        "ports": [{"name": "tcp", "containerPort": POSTGRES_PORT, "protocol": "TCP"}],
        "env": [
            secret_env("POSTGRES_PASSWORD", f"{ctx.base}-db", "password"),
            # A subdirectory: the volume's root may hold lost+found, which initdb refuses.
            {"name": "PGDATA", "value": "/var/lib/postgresql/data/pgdata"},
        ],
        "volumeMounts": [
            {"name": "data", "mountPath": "/var/lib/postgresql/data"},
            {"name": "run", "mountPath": "/var/run/postgresql"},
            {"name": "tmp", "mountPath": "/tmp"},
        ],
        "readinessProbe": {"exec": {"command": ["pg_isready", "-U", "postgres"]}},
        "securityContext": container_context(PodSecurity.RESTRICTED, read_only=True),
    }
    connections = spec.db_max_connections
    if connections is not None:
        container["args"] = ["-c", f"max_connections={count(connections, 'db_max_connections', 0)}"]
    container_resources = resources(spec, "db_")
    if container_resources:
        container["resources"] = container_resources
    return container


def database(ctx: Context) -> list[Obj]:
    storage = count(ctx.spec.db_storage_gi, "db_storage_gi", DEFAULT_DB_STORAGE_GI)
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
                "spec": {
                    "securityContext": own_image_pod_context(DATABASE_USER),
                    "containers": [_postgres_container(ctx)],
                    "volumes": [
                        {"name": "run", "emptyDir": {"sizeLimit": RUN_DIR_SIZE}},
                        {"name": "tmp", "emptyDir": {"sizeLimit": RUN_DIR_SIZE}},
                    ],
                },
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
    return [statefulset, service(ctx, DATABASE, POSTGRES_PORT, headless=True)]
