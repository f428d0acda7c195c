"""The queue workers scaled by KEDA on the runs waiting in the deployment's own
PostgreSQL (the agent's `autoscaler: keda`), instead of an HPA on CPU.

A `ScaledObject` on the queue Deployment with KEDA's `postgresql` trigger, counting the
pending and running runs; the connection is the deployment's own database (its Service)
and the password comes from its `B-db` Secret through a `TriggerAuthentication`, so no
credential is written into the ScaledObject.
"""

from __future__ import annotations

from deployplane.dataplane.render.context import DATABASE, POSTGRES_PORT, QUEUE, Context
from deployplane.dataplane.render.model import Obj

KEDA_API_VERSION = "keda.sh/v1alpha1"
# The agent server's run table: one row per run, `status` pending until a worker takes
# it, running while one has it. A worker per `runs_per_worker` of those.
PENDING_RUNS_QUERY = "SELECT count(*) FROM run WHERE status IN ('pending', 'running')"
POLLING_INTERVAL_SECONDS = 15
COOLDOWN_SECONDS = 300


def trigger_authentication(ctx: Context) -> Obj:
    """KEDA reads the database password from the deployment's own Secret."""
    name = ctx.name(DATABASE)
    return {
        "apiVersion": KEDA_API_VERSION,
        "kind": "TriggerAuthentication",
        "metadata": ctx.metadata(name, QUEUE),
        "spec": {"secretTargetRef": [{"parameter": "password", "name": name, "key": "password"}]},
    }


def scaled_object(ctx: Context, minimum: int, maximum: int) -> Obj:
    """`minimum`..`maximum` queue workers, one per `runs_per_worker` pending or running
    runs. The target is > 0 (a target of "0" makes KEDA divide by zero and never scale:
    the vendor chart's `targetQueryValue: "0"` bug); activation at 0 wakes a queue
    scaled to zero by its first run."""
    name = ctx.name(QUEUE)
    return {
        "apiVersion": KEDA_API_VERSION,
        "kind": "ScaledObject",
        "metadata": ctx.metadata(name, QUEUE),
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": name},
            "minReplicaCount": minimum,
            "maxReplicaCount": maximum,
            "pollingInterval": POLLING_INTERVAL_SECONDS,
            "cooldownPeriod": COOLDOWN_SECONDS,
            "triggers": [
                {
                    "type": "postgresql",
                    "metadata": {
                        "query": PENDING_RUNS_QUERY,
                        "targetQueryValue": str(ctx.settings.runs_per_worker),
                        "activationTargetQueryValue": "0",
                        "host": f"{ctx.name(DATABASE)}.{ctx.namespace}.svc",
                        "port": str(POSTGRES_PORT),
                        "userName": "postgres",
                        "dbName": "postgres",
                        "sslmode": "disable",
                    },
                    "authenticationRef": {
                        "name": ctx.name(DATABASE),
                        "kind": "TriggerAuthentication",
                    },
                }
            ],
        },
    }
