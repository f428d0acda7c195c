"""The real node's pure parts: configs, the namespace script, OCI archives, certificates."""

from __future__ import annotations

import io
import json
import tarfile
import tomllib
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from cryptography import x509
from cryptography.x509.oid import NameOID

from deployplane.cli.root import root
from deployplane.devcluster.commandlines import Ports, apiserver_argv
from deployplane.devcluster.errors import DevClusterError
from deployplane.devcluster.pki import pki_files, write_pki
from deployplane.devcluster.realnode import configs, dns, layout, ociarchive, script
from deployplane.devcluster.realnode import node as real_node
from deployplane.devcluster.realnode.layout import NodePaths


def test_containerd_config_pins_shim_runc_sandbox_and_oom_restriction(tmp_path: Path) -> None:
    shim = tmp_path / "bin" / "containerd-shim-runc-v2"
    config = tomllib.loads(configs.containerd_toml(NodePaths(tmp_path), shim))
    assert config["version"] == 3
    assert config["root"] == "/var/lib/containerd"  # the node's private /var/lib
    runtime = config["plugins"]["io.containerd.cri.v1.runtime"]
    assert runtime["restrict_oom_score_adj"] is True
    runc = runtime["containerd"]["runtimes"]["runc"]
    # Never Debian's containerd 1.6 shim from PATH.
    assert runc["runtime_path"] == str(shim)
    assert runc["options"] == {"BinaryName": "/usr/sbin/runc", "SystemdCgroup": False}
    assert runtime["cni"]["conf_dir"] == str(tmp_path / "etc" / "cni")
    pinned = config["plugins"]["io.containerd.cri.v1.images"]["pinned_images"]
    assert pinned["sandbox"] == layout.PAUSE_IMAGE


def test_kubelet_config_for_a_cgroup_v1_host_without_systemd(tmp_path: Path) -> None:
    paths = NodePaths(tmp_path)
    ca, cert, key = tmp_path / "ca", tmp_path / "c", tmp_path / "k"
    config = yaml.safe_load(configs.kubelet_config(paths, ca, cert, key, dns=False))
    assert config["failCgroupV1"] is False
    assert config["cgroupDriver"] == "cgroupfs"
    assert config["cgroupRoot"] == f"/{layout.CGROUP_ROOT}"
    assert config["protectKernelDefaults"] is True
    assert config["address"] == layout.NODE_IP
    assert config["authentication"]["anonymous"] == {"enabled": False}
    assert config["clusterDNS"] == []
    assert yaml.safe_load(configs.kubelet_config(paths, ca, cert, key, dns=True))["clusterDNS"] == [
        layout.CLUSTER_DNS_IP
    ]


def test_kube_proxy_writes_no_conntrack_sysctl(tmp_path: Path) -> None:
    config = yaml.safe_load(configs.kube_proxy_config(tmp_path / "kubeconfig"))
    assert config["mode"] == "iptables"
    assert set(config["conntrack"].values()) <= {0, "0s"}


def test_cni_network_is_the_pod_range_with_masquerade() -> None:
    bridge = json.loads(configs.cni_conflist())["plugins"][0]
    assert bridge["ipMasq"] is True
    assert bridge["ipam"]["ranges"] == [[{"subnet": layout.POD_CIDR}]]


def test_namespace_script_stays_inside_the_node(tmp_path: Path) -> None:
    text = script.namespace_setup(NodePaths(tmp_path))
    assert text.startswith("set -eux\n")
    # The sysfs is fresh and the cgroups bound back before / becomes rshared.
    order = [text.index(s) for s in ("mount -t sysfs", "--rbind", "--make-rshared /")]
    assert order[0] < text.index(f"--rbind {tmp_path}/cgroup-stash /sys/fs/cgroup") < order[2]
    for name in layout.KERNEL_TUNABLES:
        assert f"mount -o remount,bind,ro /proc/sys/{name}" in text
    assert "192.0.2." not in text
    guard = script.guard_commands()
    chain, mark = script.GUARD_CHAIN, script.GUARD_MARK
    assert f"iptables -w -t mangle -A FORWARD -j {chain}" in guard
    assert f"iptables -w -t mangle -A OUTPUT -j {chain}" in guard
    # Everything not allowed is marked, rejected in filter, and dropped in mangle anyway.
    assert guard.index(f"iptables -w -t mangle -A {chain} -j MARK --set-xmark {mark}/{mark}") == (
        len(script.GUARD_ALLOWED) + 1
    )
    assert f"iptables -w -t mangle -A POSTROUTING -m mark --mark {mark}/{mark} -j DROP" in guard
    assert any(c.startswith("iptables -w -t filter -I FORWARD 1") and "REJECT" in c for c in guard)


def test_normalize_like_docker() -> None:
    assert ociarchive.normalize("deployplane:dev") == "docker.io/library/deployplane:dev"
    assert ociarchive.normalize("busybox") == "docker.io/library/busybox:latest"
    assert ociarchive.normalize("me/app:1") == "docker.io/me/app:1"
    assert ociarchive.normalize("localhost/x/pause:3.10") == "localhost/x/pause:3.10"
    assert ociarchive.normalize("registry:5000/a") == "registry:5000/a:latest"
    assert ociarchive.normalize("quay.io/a/b@sha256:ab") == "quay.io/a/b@sha256:ab"


def _index(archive: bytes) -> dict[str, object]:
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        member = tar.extractfile("index.json")
        assert member is not None
        return dict(json.load(member))


def test_an_image_may_hold_a_directory_any_user_writes(tmp_path: Path) -> None:
    """A user's stand-in image for the restricted data plane: non-root, with its /tmp."""
    spec = ociarchive.ImageSpec(
        ref="localhost/t/img:1",
        files=[
            ociarchive.ImageFile("bin/tool", b"\x7fELF"),
            ociarchive.ImageFile("tmp", mode=0o1777, directory=True),
        ],
        user="65534:65534",
    )
    path = ociarchive.write_image(spec, tmp_path / "img.tar")
    with tarfile.open(path) as archive:

        def blob(digest: str) -> bytes:
            member = archive.extractfile(f"blobs/sha256/{digest.removeprefix('sha256:')}")
            assert member is not None
            return member.read()

        manifest = json.loads(blob(_index(path.read_bytes())["manifests"][0]["digest"]))
        config = json.loads(blob(manifest["config"]["digest"]))
        layer = blob(manifest["layers"][0]["digest"])
    assert config["config"]["User"] == "65534:65534"
    with tarfile.open(fileobj=io.BytesIO(layer)) as tar:
        tmp = tar.getmember("tmp")
    assert tmp.isdir()
    assert tmp.mode == 0o1777


def test_oci_archive_written_and_renamed_for_containerd(tmp_path: Path) -> None:
    spec = ociarchive.ImageSpec(
        ref="localhost/t/img:1",
        files=[
            ociarchive.ImageFile("bin/tool", b"\x7fELF"),
            ociarchive.ImageFile("bin/sh", symlink="tool"),
        ],
        entrypoint=["/bin/tool"],
    )
    path = ociarchive.write_image(spec, tmp_path / "img.tar")
    with tarfile.open(path) as tar:
        assert {"oci-layout", "index.json"} <= set(tar.getnames())
    # An archive named only by its OCI ref (as buildah writes it) gets containerd's full name.
    with tarfile.open(path) as tar, tarfile.open(tmp_path / "bare.tar", "w") as out:
        for member in tar:
            data = tar.extractfile(member)
            if member.name == "index.json" and data is not None:
                index = json.load(data)
                index["manifests"][0]["annotations"] = {ociarchive.OCI_REF_NAME: "deployplane:dev"}
                raw = json.dumps(index).encode()
                member.size = len(raw)
                out.addfile(member, io.BytesIO(raw))
            else:
                out.addfile(member, data)
    buf = io.BytesIO()
    names = ociarchive.containerd_stream(tmp_path / "bare.tar", buf)
    assert names == ["docker.io/library/deployplane:dev"]
    manifests = _index(buf.getvalue())["manifests"]
    assert isinstance(manifests, list)
    assert manifests[0]["annotations"][ociarchive.CONTAINERD_NAME] == names[0]
    # Imported under another name: an earlier build of the same image beside this one.
    buf = io.BytesIO()
    names = ociarchive.containerd_stream(path, buf, "deployplane:previous")
    assert names == ["docker.io/library/deployplane:previous"]
    (annotations,) = [m["annotations"] for m in _index(buf.getvalue())["manifests"]]
    assert annotations[ociarchive.CONTAINERD_NAME] == names[0]
    assert annotations[ociarchive.OCI_REF_NAME] == "previous"


def test_node_identities_and_apiserver_kubelet_flags(tmp_path: Path) -> None:
    pki = write_pki(tmp_path / "pki")
    node = x509.load_pem_x509_certificate(pki.node_cert.read_bytes())
    assert node.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value == (
        f"system:node:{layout.NODE_NAME}"
    )
    assert node.subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)[0].value == "system:nodes"
    proxy = x509.load_pem_x509_certificate(pki.kube_proxy_cert.read_bytes())
    assert proxy.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value == "system:kube-proxy"
    files = pki_files(tmp_path / "pki")
    argv = apiserver_argv(tmp_path / "kas", Ports(1, 2, 3), files, tmp_path / "pki", None)
    assert f"--kubelet-client-certificate={files.kubelet_client_cert}" in argv
    assert "--kubelet-preferred-address-types=InternalIP,Hostname" in argv


def test_real_node_refused_without_its_binaries(tmp_path: Path) -> None:
    with pytest.raises(DevClusterError, match="make node-tools"):
        real_node.check(tmp_path)


def test_cluster_dns_serves_cluster_local_on_the_node(tmp_path: Path) -> None:
    corefile = dns.corefile(tmp_path / "coredns.kubeconfig")
    assert f"bind {layout.NODE_IP}" in corefile
    assert f"kubeconfig {tmp_path / 'coredns.kubeconfig'} deployplane-dev" in corefile
    assert "rcode NXDOMAIN" in corefile  # nothing is forwarded off the node
    service = dns.service_manifest()
    assert service["spec"]["clusterIP"] == layout.CLUSTER_DNS_IP
    assert "selector" not in service["spec"]
    endpoints = dns.dns_endpoint_slice()
    assert endpoints["metadata"]["labels"]["kubernetes.io/service-name"] == "kube-dns"
    assert endpoints["endpoints"][0]["addresses"] == [layout.NODE_IP]
    assert dns.apiserver_endpoint_slice()["ports"][0]["port"] == layout.APISERVER_PORT


def test_load_image_needs_a_running_real_node(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        root,
        ["dev", "cluster", "load-image", str(tmp_path / "x.tar"), "--state-dir", str(tmp_path)],
    )
    assert result.exit_code == 1
    assert "no dev cluster with a real node" in result.output
