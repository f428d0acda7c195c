"""The real node's configuration files: pure functions of paths and names.

containerd (config version 3 of containerd 2.x), the kubelet (KubeletConfiguration),
kube-proxy (KubeProxyConfiguration) and the bridge CNI network. Each says why a
setting departs from the default; most exist to keep the node inside its sandbox.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from deployplane.devcluster.realnode import layout
from deployplane.devcluster.realnode.layout import NodePaths

# Plugins the node does not use: fewer goroutines and no probing of kernel features.
_DISABLED_PLUGINS = (
    "io.containerd.internal.v1.tracing",
    "io.containerd.tracing.processor.v1.otlp",
    "io.containerd.nri.v1.nri",
    "io.containerd.snapshotter.v1.aufs",
    "io.containerd.snapshotter.v1.btrfs",
    "io.containerd.snapshotter.v1.devmapper",
    "io.containerd.snapshotter.v1.zfs",
    "io.containerd.snapshotter.v1.blockfile",
    "io.containerd.snapshotter.v1.erofs",
)


def _toml_str(value: str) -> str:
    return json.dumps(value)  # a TOML basic string is a JSON string for these values


def containerd_toml(paths: NodePaths, shim: Path, snapshotter: str = layout.SNAPSHOTTER) -> str:
    """containerd's config. Its root and state are the node's private /var/lib and /run."""
    cri_runtime = "plugins.'io.containerd.cri.v1.runtime'"
    runc = f"{cri_runtime}.containerd.runtimes.runc"
    disabled = ", ".join(_toml_str(p) for p in _DISABLED_PLUGINS)
    return f"""version = 3
root = "/var/lib/containerd"
state = "/run/containerd"
disabled_plugins = [{disabled}]

[grpc]
  address = {_toml_str(paths.containerd_socket)}

[plugins.'io.containerd.cri.v1.images']
  snapshotter = {_toml_str(snapshotter)}

[plugins.'io.containerd.cri.v1.images'.pinned_images]
  # Built here from kubernetes' pause.c and imported; never pulled.
  sandbox = {_toml_str(layout.PAUSE_IMAGE)}

[{cri_runtime}]
  # The sandbox lacks CAP_SYS_RESOURCE: runc must not lower a container's
  # oom_score_adj below its own.
  restrict_oom_score_adj = true
  enable_selinux = false

[{cri_runtime}.containerd]
  default_runtime_name = "runc"

[{runc}]
  runtime_type = "io.containerd.runc.v2"
  # The shim built with containerd 2.x, never Debian's 1.6 one found on PATH.
  runtime_path = {_toml_str(str(shim))}

[{runc}.options]
  BinaryName = {_toml_str(str(layout.RUNC))}
  SystemdCgroup = false

[{cri_runtime}.cni]
  bin_dirs = [{_toml_str(str(layout.CNI_BIN_DIR))}]
  conf_dir = {_toml_str(str(paths.cni_conf_dir))}

[plugins.'io.containerd.grpc.v1.cri']
  disable_tcp_service = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
"""


def cni_conflist() -> str:
    """Pods on POD_CIDR behind the `cni0` bridge, masqueraded when they leave it."""
    network: dict[str, Any] = {
        "cniVersion": "1.0.0",
        "name": "deployplane",
        "plugins": [
            {
                "type": "bridge",
                "bridge": "cni0",
                "isGateway": True,
                "ipMasq": True,
                "hairpinMode": True,
                "ipam": {
                    "type": "host-local",
                    "ranges": [[{"subnet": layout.POD_CIDR}]],
                    "routes": [{"dst": "0.0.0.0/0"}],
                },
            },
            {"type": "portmap", "capabilities": {"portMappings": True}},
        ],
    }
    return json.dumps(network, indent=2) + "\n"


def kubelet_config(paths: NodePaths, ca_cert: Path, cert: Path, key: Path, dns: bool) -> str:
    config: dict[str, Any] = {
        "apiVersion": "kubelet.config.k8s.io/v1beta1",
        "kind": "KubeletConfiguration",
        # This host has cgroup v1 hierarchies (and an empty cgroup2 mount), no systemd.
        "failCgroupV1": False,
        "cgroupDriver": "cgroupfs",
        "cgroupRoot": f"/{layout.CGROUP_ROOT}",
        "cgroupsPerQOS": True,
        "containerRuntimeEndpoint": f"unix://{paths.containerd_socket}",
        "address": layout.NODE_IP,
        "port": 10250,
        "readOnlyPort": 0,
        "healthzBindAddress": "127.0.0.1",
        "healthzPort": 10248,
        "tlsCertFile": str(cert),
        "tlsPrivateKeyFile": str(key),
        # The apiserver authenticates with its kubelet-client certificate.
        "authentication": {
            "anonymous": {"enabled": False},
            "webhook": {"enabled": False},
            "x509": {"clientCAFile": str(ca_cert)},
        },
        "authorization": {"mode": "AlwaysAllow"},
        "clusterDomain": "cluster.local",
        "clusterDNS": [layout.CLUSTER_DNS_IP] if dns else [],
        "resolvConf": str(paths.resolv_conf),
        # Only check the kernel tunables (the sandbox shows the expected values): a
        # kubelet must never write the host's vm.overcommit_memory or kernel.panic.
        "protectKernelDefaults": True,
        "failSwapOn": False,
        "volumePluginDir": str(paths.volume_plugin_dir),
        # Imported images are all there is (no registry): never garbage-collect them,
        # and never evict pods for a disk shared with the rest of the machine.
        "imageGCHighThresholdPercent": 100,
        "imageGCLowThresholdPercent": 99,
        "evictionHard": {
            "nodefs.available": "0%",
            "nodefs.inodesFree": "0%",
            "imagefs.available": "0%",
        },
        "serializeImagePulls": False,
        "rotateCertificates": False,
        "maxPods": 110,
    }
    return yaml.safe_dump(config, sort_keys=False)


def kube_proxy_config(kubeconfig: Path) -> str:
    config: dict[str, Any] = {
        "apiVersion": "kubeproxy.config.k8s.io/v1alpha1",
        "kind": "KubeProxyConfiguration",
        "clientConnection": {"kubeconfig": str(kubeconfig)},
        "mode": "iptables",
        "hostnameOverride": layout.NODE_NAME,
        "clusterCIDR": layout.POD_CIDR,
        "healthzBindAddress": "127.0.0.1:10256",
        "metricsBindAddress": "127.0.0.1:10249",
        # Every conntrack setting 0: kube-proxy then writes no (global) nf_conntrack sysctl.
        "conntrack": {
            "maxPerCore": 0,
            "min": 0,
            "tcpEstablishedTimeout": "0s",
            "tcpCloseWaitTimeout": "0s",
            "udpTimeout": "0s",
            "udpStreamTimeout": "0s",
        },
    }
    return yaml.safe_dump(config, sort_keys=False)


def resolv_conf() -> str:
    """The node's /etc/resolv.conf: no resolver. containerd's pull of an image that is
    not imported fails at once (connection refused) instead of waiting on a DNS server
    the egress guard drops packets to."""
    return "nameserver 127.0.0.1\noptions timeout:1 attempts:1\n"
