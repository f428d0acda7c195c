"""The real node's volumes (devcluster/realnode/storage.py): rancher's
local-path-provisioner as the node's default StorageClass, its files, its command line
and its helper image."""

from __future__ import annotations

import json
import tarfile
from pathlib import Path

import pytest
from cryptography import x509

from deployplane.devcluster.pki import LOCAL_PATH_USER, MASTERS_GROUP, pki_files, write_pki
from deployplane.devcluster.realnode import layout, node, storage


def test_the_class_is_the_default_waits_for_its_pod_and_deletes_its_volume() -> None:
    *_, storage_class = storage.manifests()
    assert storage_class == {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {
            "name": "local-path",
            "annotations": {"storageclass.kubernetes.io/is-default-class": "true"},
        },
        "provisioner": "rancher.io/local-path",
        "reclaimPolicy": "Delete",
        "volumeBindingMode": "WaitForFirstConsumer",
    }


def test_volumes_are_under_the_nodes_private_var_lib() -> None:
    config = json.loads(storage.config_json())
    assert config == {
        "nodePathMap": [{"node": layout.NODE_NAME, "paths": ["/var/lib/local-path-provisioner"]}]
    }
    # inside the node's mount namespace /var/lib is <state>/node/var-lib: gone at `down`
    assert "/var/lib" in layout.NodePaths(Path("/s/node")).private_dirs
    namespace, account, config_map, _ = storage.manifests()
    assert namespace["metadata"]["name"] == account["metadata"]["namespace"] == "local-path-storage"
    # the provisioner's own scripts: a directory any pod user may write, removed with it
    assert 'mkdir -m 0777 -p "$VOL_DIR"' in config_map["data"]["setup"]
    assert 'rm -rf "$VOL_DIR"' in config_map["data"]["teardown"]


def test_the_provisioner_runs_with_its_files_and_its_own_identity(tmp_path: Path) -> None:
    config, pod = storage.write_files(tmp_path / "local-path")
    assert json.loads(config.read_text()) == json.loads(storage.config_json())
    template = json.loads(pod.read_text())
    (container,) = template["spec"]["containers"]
    assert container["image"] == storage.HELPER_IMAGE
    assert container["imagePullPolicy"] == "Never"  # imported at start, no registry
    argv = storage.argv(Path("/bin/lpp"), tmp_path / "k", config, pod)
    assert argv[:2] == ["/bin/lpp", "start"]
    assert f"--helper-pod-file={pod}" in argv
    assert "--provisioner-name=rancher.io/local-path" in argv
    assert "--service-account-name=local-path-provisioner" in argv
    write_pki(tmp_path / "pki")
    files = pki_files(tmp_path / "pki")
    cert = x509.load_pem_x509_certificate(files.local_path_cert.read_bytes())
    subject = cert.subject.rfc4514_string()
    assert f"CN={LOCAL_PATH_USER}" in subject
    assert f"O={MASTERS_GROUP}" in subject


def test_the_helper_image_is_the_hosts_static_busybox(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    busybox = tmp_path / "busybox"
    busybox.write_bytes(b"\x7fELF static busybox")
    monkeypatch.setattr(storage, "BUSYBOX", busybox)
    archive = storage.helper_archive(tmp_path)
    with tarfile.open(archive) as outer:
        index = json.loads(outer.extractfile("index.json").read())  # type: ignore[union-attr]
    names = [m["annotations"]["io.containerd.image.name"] for m in index["manifests"]]
    assert names == [storage.HELPER_IMAGE]


def test_the_provisioner_is_a_node_daemon_stopped_before_the_kubelet() -> None:
    assert storage.BINARY in node.BINARIES
    assert node.STOP_ORDER.index(storage.BINARY) < node.STOP_ORDER.index("kubelet")
