"""The in-memory server's state on a claim the deployment owns.

`langgraph-runtime-inmem` keeps threads, runs, assistants, crons and the store in the
server's memory and pickles them to `.langgraph_api/` under its working directory, from
a background thread every 10 s and once more at a normal shutdown. Put there, on a
PersistentVolumeClaim owned by the deployment's owner ConfigMap (not by a revision),
they outlive the pod: a restarted pod, and the pod of the next revision, load them.

The files have one writer: two servers over them would each overwrite what the other
flushed. So one replica, a `Recreate` rollout (the old pod is gone before the new one
starts) and a `ReadWriteOncePod` claim, which makes the scheduler hold a replacement
pod (a deleted or evicted pod's, which no rollout strategy covers) until the old one
has finished its final flush and is gone. The Deployment's annotation `ANNOTATION_STATE`
says so where `kubectl describe` shows it.

Stopping: a preStop pause lets the Service and whatever routes to it stop sending new
requests while the server still answers; then SIGTERM: the server drains the requests
in flight (at most `DRAIN_SECONDS`: the image's entry script hands it to uvicorn) and
flushes at its lifespan's end; the grace period leaves `FLUSH_SECONDS` for that flush
beyond the pause and the drain before the kubelet kills it.
"""

from __future__ import annotations

import copy

from deployplane.dataplane.render.context import SERVER, Context
from deployplane.dataplane.render.model import Obj, RenderError, RenderWarning
from deployplane.dataplane.render.quantities import count
from deployplane.dataplane.render.security import container_context
from deployplane.dataplane.render.settings import PodSecurity

# The image's working directory for the server (tools/images/agent-server.py reads
# LANGGRAPH_DATA_DIR; set here too, so the mount and the server agree by construction),
# and the runtime's directory under it.
DATA_DIR = "/tmp/langgraph-api"  # inside the pod's own /tmp volume
STATE_DIR = f"{DATA_DIR}/.langgraph_api"
DATA_DIR_ENV = "LANGGRAPH_DATA_DIR"
DRAIN_ENV = "DEPLOYPLANE_DRAIN_SECONDS"
# The agent base's user (tools/images/recipes.py): the claim's files are its group's.
SERVER_USER = 65534
DEFAULT_STORAGE_GI = 1
ACCESS_MODE = "ReadWriteOncePod"
FLUSH_INTERVAL_SECONDS = 10  # langgraph-runtime-inmem's periodic flush

PRESTOP_SECONDS = 3
DRAIN_SECONDS = 15
FLUSH_SECONDS = 12
GRACE_SECONDS = PRESTOP_SECONDS + DRAIN_SECONDS + FLUSH_SECONDS

STATE_VOLUME = "langgraph-state"
TMP_VOLUME = "langgraph-tmp"
TMP_SIZE_LIMIT = "256Mi"
CLAIM_SUFFIX = "-state"

ANNOTATION_STATE = "deployplane.io/state"
REASON_ONE_REPLICA = "OneReplica"


def claim_name(ctx: Context) -> str:
    return ctx.base + CLAIM_SUFFIX


def state_annotation(ctx: Context) -> str:
    # What matters first: `kubectl describe` cuts a value at 140 characters.
    return (
        f"one pod at a time (Recreate, {ACCESS_MODE}): the in-memory server writes its "
        f"threads, runs and store every {FLUSH_INTERVAL_SECONDS} s to claim {claim_name(ctx)}"
    )


def claim(ctx: Context) -> Obj:
    """The deployment's claim (owned by the owner ConfigMap, so it stays across revisions
    and goes with the deployment). Its size is `db_storage_gi`: for this runtime the
    files are the deployment's database."""
    storage = count(ctx.spec.db_storage_gi, "db_storage_gi", DEFAULT_STORAGE_GI)
    if storage < 1:
        raise RenderError("resource_spec.db_storage_gi must be at least 1")
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": ctx.metadata(claim_name(ctx), SERVER),
        "spec": {
            "accessModes": [ACCESS_MODE],
            "resources": {"requests": {"storage": f"{storage}Gi"}},
        },
    }


def scale_warning(ctx: Context) -> RenderWarning | None:
    """Why the server runs one replica when the resource spec asks for more (None when
    it does not): said in a Warning Event and the deploy logs, never silently."""
    asked = [
        f"{field} {value:g}"
        for field, value in (("min_scale", ctx.spec.min_scale), ("max_scale", ctx.spec.max_scale))
        if value is not None and value > 1
    ]
    if not asked:
        return None
    return RenderWarning(
        REASON_ONE_REPLICA,
        f"resource_spec {' and '.join(asked)} runs as 1 replica: this revision's image runs "
        f"the in-memory server, whose threads, runs and store are files in claim "
        f"{claim_name(ctx)} that one server at a time may write",
    )


def keep_state(ctx: Context, deployment: Obj) -> Obj:
    """The agent-server Deployment made to keep its state on the claim (a copy)."""
    result = copy.deepcopy(deployment)
    meta = result["metadata"]
    meta["annotations"] = {**meta.get("annotations", {}), ANNOTATION_STATE: state_annotation(ctx)}
    spec = result["spec"]
    spec["strategy"] = {"type": "Recreate"}
    pod = spec["template"]["spec"]
    pod["terminationGracePeriodSeconds"] = GRACE_SECONDS
    # The claim's files are the server's group's (a fresh claim is root's).
    pod["securityContext"] = {
        **pod.get("securityContext", {}),
        "fsGroup": SERVER_USER,
        "fsGroupChangePolicy": "OnRootMismatch",
    }
    pod["volumes"] = _added(
        pod.get("volumes", []),
        [
            {"name": STATE_VOLUME, "persistentVolumeClaim": {"claimName": claim_name(ctx)}},
            {"name": TMP_VOLUME, "emptyDir": {"sizeLimit": TMP_SIZE_LIMIT}},
        ],
        "name",
        "volume",
    )
    container = pod["containers"][0]
    # /tmp is the pod's own volume and the state's directory the claim, inside it: the
    # rest of the image stays read-only.
    container["volumeMounts"] = _added(
        container.get("volumeMounts", []),
        [
            {"name": TMP_VOLUME, "mountPath": "/tmp"},
            {"name": STATE_VOLUME, "mountPath": STATE_DIR},
        ],
        "mountPath",
        "volume mount path",
    )
    container["env"] = _added(
        container.get("env", []),
        [
            {"name": DATA_DIR_ENV, "value": DATA_DIR},
            {"name": DRAIN_ENV, "value": str(DRAIN_SECONDS)},
        ],
        "name",
        "environment variable",
    )
    # The image is the emulator's build on the agent base, whose user is SERVER_USER:
    # said here too, so the server cannot run as root if an image ever says otherwise
    # (the sidecars keep their own).
    container["securityContext"] = {
        **container_context(PodSecurity.RESTRICTED, read_only=True),
        "runAsNonRoot": True,
        "runAsUser": SERVER_USER,
        "runAsGroup": SERVER_USER,
    }
    container["lifecycle"] = {
        "preStop": {"exec": {"command": ["sleep", str(PRESTOP_SECONDS)]}},
    }
    return result


def _added(existing: list[Obj], ours: list[Obj], key: str, what: str) -> list[Obj]:
    taken = {item.get(key) for item in existing}
    for item in ours:
        if item[key] in taken:
            raise RenderError(f"{what} {item[key]} clashes with one the data plane sets")
    return [*existing, *ours]
