"""What `DevCluster(workloads=True)` adds so Deployments really roll out.

kube-scheduler places pods on fake nodes, the controller-manager's workload
controllers make ReplicaSets, Pods and StatefulSet claims, and kwok plays the kubelets
(pods become Ready without any container runtime) and a volume provisioner. See
kwok.py for the Stages, including the image pattern that makes pods fail.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from kubernetes import client
from kubernetes.client.exceptions import ApiException

from deployplane.devcluster import kwok

# Controllers a rollout needs, on top of the cluster's base ones: Deployments make
# ReplicaSets, ReplicaSets make Pods, StatefulSets make Pods and PVCs; the two
# protection controllers finish the deletion of claims and volumes (their admission
# plugin adds finalizers that only these controllers remove); the disruption controller
# writes a PodDisruptionBudget's status, without which Argo CD calls a PDB (the chart
# has one) Progressing forever.
WORKLOAD_CONTROLLERS = (
    "deployment",
    "replicaset",
    "statefulset",
    "pvc-protection",
    "pv-protection",
    "disruption",
)
# What a real node (realnode/) needs on top: Service endpoints for kube-proxy, the
# node-lifecycle controller (it lifts a Ready node's not-ready taint, and marks a
# silent one NotReady), the `kube-root-ca.crt` ConfigMap every pod's token volume
# mounts, garbage collection of terminated pods, and the PersistentVolume controller
# (it hands a claim to its class's provisioner, the node's local-path-provisioner, and
# binds and releases volumes: realnode/storage.py).
REAL_NODE_CONTROLLERS = (
    "endpointslice",
    "nodelifecycle",
    "root-ca-cert-publisher",
    "podgc",
    "persistentvolume-binder",
)
DEFAULT_NODES = 3


def node_names(count: int) -> list[str]:
    return [f"kwok-node-{i}" for i in range(count)]


def scheduler_argv(binary: Path, kubeconfig: Path) -> list[str]:
    return [
        str(binary),
        f"--kubeconfig={kubeconfig}",
        "--leader-elect=false",
        # No serving endpoint (health, metrics): nothing scrapes it, and it needs no
        # port. Without one it also skips the delegated authentication set-up.
        "--secure-port=0",
    ]


def kwok_argv(binary: Path, kubeconfig: Path, config: Path) -> list[str]:
    return [str(binary), f"--kubeconfig={kubeconfig}", f"--config={config}", *kwok.option_flags()]


def write_kwok_config(directory: Path) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "kwok.yaml"
    path.write_text(kwok.config_yaml())
    return path


def install(api: client.ApiClient, names: Sequence[str]) -> None:
    """Create the fake nodes and the default StorageClass (already there is fine)."""
    core = client.CoreV1Api(api)
    storage = client.StorageV1Api(api)
    with _tolerate_conflict():
        storage.create_storage_class(body=kwok.storage_class_manifest())
    for name in names:
        with _tolerate_conflict():
            core.create_node(body=kwok.node_manifest(name))
        # The TaintNodesByCondition admission plugin gives every new node the
        # `node.kubernetes.io/not-ready` taint, which the node-lifecycle controller
        # lifts once the node is Ready. That controller would also mark nodes without
        # heartbeats NotReady, and heartbeats are writes an idle cluster should not
        # make; so the taint is lifted here, as the controller would do.
        core.patch_node(name, {"spec": {"taints": None}})


@contextlib.contextmanager
def _tolerate_conflict() -> Iterator[None]:
    try:
        yield
    except ApiException as e:
        if e.status != 409:
            raise


def _ready(node: object) -> bool:
    conditions = getattr(getattr(node, "status", None), "conditions", None) or []
    return any(c.type == "Ready" and c.status == "True" for c in conditions)


def wait_nodes_ready(
    api: client.ApiClient,
    names: Sequence[str],
    deadline: float,
    check_alive: Callable[[], None],
) -> None:
    """Return once kwok has initialized every node; `check_alive` raises if a server died."""
    core = client.CoreV1Api(api)
    wanted = set(names)
    while True:
        nodes = core.list_node(label_selector="type=kwok").items
        if wanted <= {n.metadata.name for n in nodes if _ready(n)}:
            return
        check_alive()
        if time.monotonic() > deadline:
            raise TimeoutError(f"kwok did not make nodes {sorted(wanted)} Ready in time")
        time.sleep(0.1)
