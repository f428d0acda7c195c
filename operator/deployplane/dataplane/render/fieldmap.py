"""`FIELD_MAP`: what each ResourceSpec field becomes in the rendered objects.

docs/dataplane.md prints it and a unit test checks that no field of the model or the
published contract is missing.
"""

from __future__ import annotations

FIELD_MAP: dict[str, str] = {
    "min_scale": "agent-server Deployment `replicas` (default 1; runtime `inmem`: at most 1), "
    "or with an HPA the count it is created at (then the HPA's); HPA `minReplicas`",
    "max_scale": "HPA `maxReplicas` (no HPA when unset or when min_scale is 0; runtime `inmem`: "
    "none, a Warning Event when above 1)",
    "cpu": "agent-server container `requests.cpu` (cores)",
    "cpu_limit": "agent-server container `limits.cpu` (cores)",
    "memory_mb": "agent-server container `requests.memory` (megabytes, suffix M)",
    "memory_limit_mb": "agent-server container `limits.memory` (megabytes, suffix M)",
    "queue_min_scale": "queue Deployment `replicas` (default 1), or with an HPA or a "
    "ScaledObject the count it is created at (then the autoscaler's); queue HPA "
    "`minReplicas` or ScaledObject `minReplicaCount`",
    "queue_max_scale": "queue HPA `maxReplicas` or ScaledObject `maxReplicaCount` "
    "(neither when unset)",
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
    "db_storage_gi": "PostgreSQL PVC (volumeClaimTemplate) `requests.storage` in Gi (default 1); "
    "runtime `inmem`: the claim `B-state`'s (default 1)",
    "db_max_connections": "PostgreSQL `-c max_connections=N`",
}
