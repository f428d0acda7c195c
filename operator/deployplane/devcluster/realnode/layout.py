"""The real node's names, addresses and where its files live.

Everything the node writes is under `<state-dir>/node/`; inside the node's mount
namespace its private `/run`, `/var/lib` and `/var/log` are bind mounts of directories
there, so containerd's sockets and snapshots, the kubelet's pod directories and the
CNI results never touch the host's own directories.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from deployplane.devcluster.pki import REAL_NODE_IP, REAL_NODE_NAME

NODE_NAME = REAL_NODE_NAME
# RFC 2544 benchmarking space: never routed on the Internet, and not the host's own
# 192.0.2.0/24. The host end is .1, the node end .2.
HOST_IP = "198.18.0.1"
NODE_IP = REAL_NODE_IP
VETH_PREFIX = 30
HOST_VETH = "dpnode0"
POD_CIDR = "10.244.0.0/24"
SERVICE_CIDR = "10.0.0.0/24"
CLUSTER_DNS_IP = "10.0.0.10"
# The node's view of the apiserver: a forwarder in the node's network namespace on
# NODE_IP:APISERVER_PORT relays to the apiserver on the host's 127.0.0.1.
APISERVER_PORT = 6443
# The kubelet's cgroup root, made in every cgroup v1 hierarchy (cgroups.py).
CGROUP_ROOT = "deployplane-node"
# The node's daemons (containerd and its shims, kubelet, kube-proxy) run in this child
# of CGROUP_ROOT; the pods in the kubelet's `kubepods` beside it.
DAEMON_CGROUP = f"{CGROUP_ROOT}/system"
CONTAINERD_NAMESPACE = "k8s.io"
SNAPSHOTTER = "overlayfs"
PAUSE_IMAGE = "localhost/deployplane/pause:3.10"
CNI_BIN_DIR = Path("/usr/lib/cni")
RUNC = Path("/usr/sbin/runc")
# The kubelet's kernel tunables (protectKernelDefaults): the node's mount namespace
# shows read-only files with the values it expects, so it never writes the host's.
KERNEL_TUNABLES = {
    "vm/overcommit_memory": "1",
    "vm/panic_on_oom": "0",
    "kernel/panic": "10",
    "kernel/panic_on_oops": "1",
    "kernel/keys/root_maxkeys": "1000000",
    "kernel/keys/root_maxbytes": "25000000",
}


@dataclass(frozen=True)
class NodePaths:
    """The node's files under `<state-dir>/node`."""

    root: Path

    @property
    def private_dirs(self) -> dict[str, Path]:
        """The node's own /run, /var/lib and /var/log (bind-mounted inside its namespace)."""
        return {
            "/run": self.root / "run",
            "/var/lib": self.root / "var-lib",
            "/var/log": self.root / "var-log",
        }

    @property
    def etc(self) -> Path:
        return self.root / "etc"

    @property
    def tunables(self) -> Path:
        return self.root / "sysctl"

    @property
    def cgroup_stash(self) -> Path:
        return self.root / "cgroup-stash"

    @property
    def containerd_config(self) -> Path:
        return self.etc / "containerd.toml"

    @property
    def kubelet_config(self) -> Path:
        return self.etc / "kubelet.yaml"

    @property
    def kube_proxy_config(self) -> Path:
        return self.etc / "kube-proxy.yaml"

    @property
    def cni_conf_dir(self) -> Path:
        return self.etc / "cni"

    @property
    def resolv_conf(self) -> Path:
        return self.etc / "resolv.conf"

    @property
    def volume_plugin_dir(self) -> Path:
        return self.root / "volume-plugins"

    @property
    def images(self) -> Path:
        return self.root / "images"

    @property
    def containerd_socket(self) -> str:
        """As seen inside the node's mount namespace."""
        return "/run/containerd/containerd.sock"
