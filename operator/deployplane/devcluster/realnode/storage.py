"""The real node's volumes: rancher's local-path-provisioner, the cluster's default
StorageClass `local-path`.

A claim of the class is provisioned the way kind and k3s provision theirs: once a pod
using it is scheduled (`WaitForFirstConsumer`), the provisioner runs a helper pod on
the node that makes the volume's directory (mode 0777, so a pod of any user writes it)
and creates a `hostPath` PersistentVolume for the node; when the claim goes, a helper
pod removes the directory (`reclaimPolicy: Delete`). The directories are under the
node's private `/var/lib` (`<state>/node/var-lib/local-path-provisioner/`), so they go
with the node's state at `down` too.

The provisioner (built from its Go module, `make node-tools`) runs as a node daemon
beside CoreDNS, with its own cluster-admin client certificate; its helper pods run the
host's static busybox as a `FROM scratch` image imported at start. kwok's `kwok-volume`
class stays, no longer the default: its hostPath directories belong to root with mode
0755, which only a root container writes.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kubernetes import client

from deployplane.devcluster.kwok_stages import STORAGE_CLASS as KWOK_STORAGE_CLASS
from deployplane.devcluster.realnode import layout, ociarchive

BINARY = "local-path-provisioner"
BUSYBOX = Path("/bin/busybox")
HELPER_IMAGE = "localhost/deployplane/busybox:1"
HELPER_APPLETS = ("sh", "mkdir", "rm", "chmod")
STORAGE_CLASS = "local-path"
PROVISIONER_NAME = "rancher.io/local-path"
NAMESPACE = "local-path-storage"
CONFIG_MAP = "local-path-config"
SERVICE_ACCOUNT = "local-path-provisioner"
# On the node: its private /var/lib (layout.NodePaths.private_dirs).
VOLUME_DIR = "/var/lib/local-path-provisioner"
DEFAULT_CLASS = "storageclass.kubernetes.io/is-default-class"

# The provisioner's own scripts (its deploy/local-path-storage.yaml).
SETUP = '#!/bin/sh\nset -eu\nmkdir -m 0777 -p "$VOL_DIR"\n'
TEARDOWN = '#!/bin/sh\nset -eu\nrm -rf "$VOL_DIR"\n'


def config_json() -> str:
    return json.dumps({"nodePathMap": [{"node": layout.NODE_NAME, "paths": [VOLUME_DIR]}]})


def helper_pod() -> dict[str, Any]:
    """The template of the helper pods (the provisioner adds the command, the volumes
    and the node)."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "helper-pod"},
        "spec": {
            "containers": [
                {"name": "helper-pod", "image": HELPER_IMAGE, "imagePullPolicy": "Never"}
            ],
        },
    }


def write_files(directory: Path) -> tuple[Path, Path]:
    """The provisioner's config file and helper pod template: (config, helper pod)."""
    directory.mkdir(parents=True, exist_ok=True)
    config = directory / "config.json"
    config.write_text(config_json())
    pod = directory / "helperPod.yaml"
    pod.write_text(json.dumps(helper_pod()))  # JSON is YAML
    return config, pod


def argv(binary: Path, kubeconfig: Path, config: Path, pod: Path) -> list[str]:
    return [
        str(binary),
        "start",
        f"--kubeconfig={kubeconfig}",
        f"--config={config}",
        f"--helper-pod-file={pod}",
        f"--provisioner-name={PROVISIONER_NAME}",
        f"--namespace={NAMESPACE}",
        f"--configmap-name={CONFIG_MAP}",
        f"--service-account-name={SERVICE_ACCOUNT}",
        f"--helper-image={HELPER_IMAGE}",
    ]


def helper_archive(directory: Path) -> Path:
    """The helper pods' image: the host's static busybox (`make node-tools`)."""
    files = [ociarchive.ImageFile("bin/busybox", BUSYBOX.read_bytes())]
    files += [ociarchive.ImageFile(f"bin/{a}", symlink="busybox") for a in HELPER_APPLETS]
    spec = ociarchive.ImageSpec(ref=HELPER_IMAGE, files=files, cmd=["sh"])
    return ociarchive.write_image(spec, directory / "local-path-helper.tar")


def manifests() -> list[dict[str, Any]]:
    """What the provisioner needs in the cluster: its namespace, the ServiceAccount of
    its helper pods, the ConfigMap their scripts are mounted from, and the class."""
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}},
        {
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": {"name": SERVICE_ACCOUNT, "namespace": NAMESPACE},
            "automountServiceAccountToken": False,
        },
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": CONFIG_MAP, "namespace": NAMESPACE},
            "data": {"setup": SETUP, "teardown": TEARDOWN},
        },
        {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "StorageClass",
            "metadata": {"name": STORAGE_CLASS, "annotations": {DEFAULT_CLASS: "true"}},
            "provisioner": PROVISIONER_NAME,
            "reclaimPolicy": "Delete",
            "volumeBindingMode": "WaitForFirstConsumer",
        },
    ]


def install(api: client.ApiClient) -> None:
    """Create `manifests()` (those already there are left as they are) and make kwok's
    class no longer the default."""
    core, storage = client.CoreV1Api(api), client.StorageV1Api(api)
    namespace, account, config_map, storage_class = manifests()
    _created(lambda: core.create_namespace(namespace))
    _created(lambda: core.create_namespaced_service_account(NAMESPACE, account))
    _created(lambda: core.create_namespaced_config_map(NAMESPACE, config_map))
    _created(lambda: storage.create_storage_class(storage_class))
    patch = {"metadata": {"annotations": {DEFAULT_CLASS: "false"}}}
    storage.patch_storage_class(KWOK_STORAGE_CLASS, patch)


def _created(create: Callable[[], object]) -> None:
    try:
        create()
    except client.ApiException as e:
        if e.status != 409:
            raise
