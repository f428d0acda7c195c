"""kwok's configuration for the dev cluster: fake nodes and the Stages that play kubelets.

kwok (sigs.k8s.io/kwok) watches nodes and pods and moves them through *Stages*:
a Stage selects objects (CEL or jq expressions) and patches their status. kwok ships
no built-in Stages (it refuses to start without any), so we give it ours in a config
file: the upstream "fast" node and pod Stages (kustomize/stage/{node,pod}/fast and
volume/fast of kwok v0.8, Apache-2.0), with two changes that make failures testable:

- `pod-ready` skips pods with an image reference containing `fail-pull`;
- `pod-fail-pull` gives those pods what a kubelet reports for an image it cannot pull:
  container waiting reason `ErrImagePull`, then `pod-image-pull-backoff` turns it into
  `ImagePullBackOff`. The pods never become Ready, so a Deployment's progress deadline
  is exceeded as on a real cluster.

No heartbeat Stage and no node leases: nothing in the dev cluster marks silent nodes
NotReady (no node-lifecycle controller), and an idle cluster then writes nothing.

This module writes kwok's config file and flags and the objects kwok needs in the
cluster (fake nodes, the StorageClass); the Stages are in kwok_stages.py, the status
templates they fill in are in kwok_templates.py.
"""

from __future__ import annotations

from typing import Any

import yaml

from deployplane.devcluster.kwok_stages import (
    FAIL_PULL_PATTERN,
    STORAGE_CLASS,
    node_stages,
    pod_stages,
    volume_stages,
)

__all__ = [
    "FAIL_PULL_PATTERN",
    "NODE_ANNOTATION",
    "STORAGE_CLASS",
    "config_yaml",
    "node_manifest",
    "option_flags",
    "storage_class_manifest",
]

NODE_ANNOTATION = "kwok.x-k8s.io/node"
NODE_ANNOTATION_VALUE = "fake"
# Pod IPs come from here; it must not overlap the Service range (10.0.0.0/24).
POD_CIDR = "10.244.0.0/16"
NODE_IP = "10.250.0.1"

# Per fake node: a common small cloud machine, so "too big to schedule" is easy to write.
NODE_CPU = "4"
NODE_MEMORY = "16Gi"
NODE_PODS = "110"
# Pods that request local disk (the chart's do) fit only on a node that reports some.
NODE_EPHEMERAL_STORAGE = "50Gi"


def config_yaml() -> str:
    """The `--config` file: every Stage.

    Options go on the command line (`option_flags`): a KwokConfiguration in the file
    replaces kwok's defaults wholesale (unset parallelism settings become 0, which
    kwok refuses), while flags start from those defaults.
    """
    docs = [*node_stages(), *pod_stages(), *volume_stages()]
    return yaml.safe_dump_all(docs, sort_keys=False)


def option_flags() -> list[str]:
    # Neither --node-port nor --server-address: kwok then serves nothing (logs, exec,
    # metrics), which nothing here uses and which would need a port.
    return [
        f"--cidr={POD_CIDR}",
        f"--node-ip={NODE_IP}",
        "--manage-all-nodes=false",
        f"--manage-nodes-with-annotation-selector={NODE_ANNOTATION}={NODE_ANNOTATION_VALUE}",
    ]


def node_manifest(name: str) -> dict[str, Any]:
    """A fake node kwok manages, with the allocatable resources of a small machine."""
    resources = {
        "cpu": NODE_CPU,
        "memory": NODE_MEMORY,
        "pods": NODE_PODS,
        "ephemeral-storage": NODE_EPHEMERAL_STORAGE,
    }
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "annotations": {NODE_ANNOTATION: NODE_ANNOTATION_VALUE},
            "labels": {
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                "type": "kwok",
            },
        },
        "status": {"allocatable": dict(resources), "capacity": dict(resources)},
    }


def storage_class_manifest() -> dict[str, Any]:
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {
            "name": STORAGE_CLASS,
            "annotations": {"storageclass.kubernetes.io/is-default-class": "true"},
        },
        "provisioner": "kwok.x-k8s.io/volume",
        "reclaimPolicy": "Delete",
        "volumeBindingMode": "Immediate",
    }
