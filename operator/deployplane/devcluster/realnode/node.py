"""Starting and stopping the real node: sandbox, containerd, images, kubelet, kube-proxy.

`start` appends each process to the cluster's list as soon as it is spawned (so a
failed start knows what to stop) and returns; `wait_ready` waits until the Node is
Ready and untainted. `stop` stops the daemons (kubelet first, so it restarts nothing),
kills every process left in the node's cgroups (shims, containers), and removes the
cgroups and the veth; the namespaces and every mount in them go with their last
process.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kubernetes import client

from deployplane.devcluster import processes
from deployplane.devcluster.errors import DevClusterError
from deployplane.devcluster.kubeconfig import write_kubeconfig
from deployplane.devcluster.pki import (
    COREDNS_USER,
    KUBE_PROXY_USER,
    LOCAL_PATH_USER,
    NODE_USER,
    PkiFiles,
)
from deployplane.devcluster.processes import ServerProcess
from deployplane.devcluster.realnode import (
    cgroups,
    configs,
    dns,
    forward,
    images,
    layout,
    sandbox,
    storage,
)
from deployplane.devcluster.realnode.layout import NodePaths

BINARIES = (
    "kubelet",
    "kube-proxy",
    "containerd",
    "containerd-shim-runc-v2",
    "ctr",
    "pause",
    storage.BINARY,
)
# Optional: without it the node has no cluster DNS (pods find Services by IP only).
COREDNS = "coredns"
HOLDER = images.HOLDER
# Stopped in this order before the cgroup sweep: the volume provisioner (it would start
# helper pods), kubelet (it would restart what is killed), containerd after kube-proxy,
# the forwarder and the holder last.
STOP_ORDER = (
    storage.BINARY,
    "kubelet",
    "kube-proxy",
    "coredns",
    "containerd",
    "apiserver-forwarder",
    HOLDER,
)
NODE_PROCESSES = frozenset(STOP_ORDER)


@dataclass(frozen=True)
class NodeBinaries:
    bin_dir: Path

    def __getitem__(self, name: str) -> Path:
        return self.bin_dir / name

    def missing(self) -> list[str]:
        return [b for b in BINARIES if not os.access(self.bin_dir / b, os.X_OK)]


def check(bin_dir: Path) -> None:
    """Refuse before anything starts when a binary, a Debian package or root is missing."""
    missing = NodeBinaries(bin_dir).missing()
    if missing:
        raise DevClusterError(
            f"--real-node needs {', '.join(missing)} in {bin_dir}; "
            "build them with `make node-tools`"
        )
    for path in (
        layout.RUNC,
        layout.CNI_BIN_DIR / "bridge",
        layout.CNI_BIN_DIR / "host-local",
        storage.BUSYBOX,
    ):
        if not os.access(path, os.X_OK):
            raise DevClusterError(f"--real-node needs {path}; install it with `make node-tools`")
    if os.geteuid() != 0:
        raise DevClusterError("--real-node needs root (namespaces, veth, cgroups)")
    if cgroups.orphaned():
        # A node whose owner was killed: its shims and containers are still there.
        sandbox.teardown()
    if sandbox.veth_exists() or any(
        (h / layout.CGROUP_ROOT).exists() for h in cgroups.v1_hierarchies()
    ):
        raise DevClusterError(
            f"a real node already runs on this machine (link {layout.HOST_VETH} or cgroup "
            f"/{layout.CGROUP_ROOT} exists); `deployplane dev cluster down` it first"
        )


def has_dns(bin_dir: Path) -> bool:
    return os.access(bin_dir / COREDNS, os.X_OK)


@dataclass(frozen=True)
class NodeStart:
    """One start of the node for the cluster in `state_dir` whose apiserver is on `port`."""

    state_dir: Path
    bin_dir: Path
    pki: PkiFiles
    apiserver_port: int
    detached: bool
    procs: list[ServerProcess]

    @property
    def paths(self) -> NodePaths:
        return NodePaths(self.state_dir / "node")

    @property
    def dns(self) -> bool:
        return has_dns(self.bin_dir)

    def run(self) -> None:
        b, paths = NodeBinaries(self.bin_dir), self.paths
        sandbox.write_files(paths)
        self._write_configs(b)
        cgroups.create()
        holder = sandbox.start_holder(paths, self._logs, self.detached)
        self.procs.append(holder)
        sandbox.connect(holder.pid, paths)
        self._spawn_forwarder(holder.pid)
        containerd = [str(b["containerd"]), "--config", str(paths.containerd_config)]
        self._spawn(holder.pid, "containerd", containerd)
        self._wait_containerd(holder.pid, b["ctr"])
        pause = images.pause_archive(b["pause"], paths.images)
        images.import_archive(holder.pid, b["ctr"], pause, unpack=True)
        helper = storage.helper_archive(paths.images)
        images.import_archive(holder.pid, b["ctr"], helper, unpack=True)
        self._spawn(holder.pid, "kubelet", self._kubelet_argv(b))
        proxy = [str(b["kube-proxy"]), f"--config={paths.kube_proxy_config}"]
        self._spawn(holder.pid, "kube-proxy", proxy)
        if self.dns:
            corefile = [str(b[COREDNS]), "-conf", str(paths.etc / "Corefile")]
            self._spawn(holder.pid, "coredns", corefile)
        self._spawn(holder.pid, storage.BINARY, self._provisioner_argv(b))
        # While the kubelet registers; the cluster waits for the node after this.
        images.import_archives(holder.pid, b["ctr"], images.cached_archives())

    @property
    def _logs(self) -> Path:
        return self.state_dir / "logs"

    def _kubeconfig(self, name: str, user: str, cert: Path, key: Path) -> Path:
        return write_kubeconfig(
            self.paths.etc / f"{name}.kubeconfig",
            server=f"https://{layout.NODE_IP}:{layout.APISERVER_PORT}",
            ca_cert=self.pki.ca_cert.read_bytes(),
            user=user,
            client_cert=cert.read_bytes(),
            client_key=key.read_bytes(),
        )

    def _write_configs(self, b: NodeBinaries) -> None:
        p, pki = self.paths, self.pki
        p.containerd_config.write_text(configs.containerd_toml(p, b["containerd-shim-runc-v2"]))
        (p.cni_conf_dir / "10-deployplane.conflist").write_text(configs.cni_conflist())
        p.resolv_conf.write_text(configs.resolv_conf())
        p.kubelet_config.write_text(
            configs.kubelet_config(
                p, pki.ca_cert, pki.kubelet_serving_cert, pki.kubelet_serving_key, self.dns
            )
        )
        proxy = self._kubeconfig(
            "kube-proxy", KUBE_PROXY_USER, pki.kube_proxy_cert, pki.kube_proxy_key
        )
        p.kube_proxy_config.write_text(configs.kube_proxy_config(proxy))
        self._kubeconfig("kubelet", NODE_USER, pki.node_cert, pki.node_key)
        if self.dns:
            coredns = self._kubeconfig("coredns", COREDNS_USER, pki.coredns_cert, pki.coredns_key)
            (p.etc / "Corefile").write_text(dns.corefile(coredns))

    def _provisioner_argv(self, b: NodeBinaries) -> list[str]:
        pki = self.pki
        kubeconfig = self._kubeconfig(
            storage.BINARY, LOCAL_PATH_USER, pki.local_path_cert, pki.local_path_key
        )
        config, pod = storage.write_files(self.paths.etc / "local-path")
        return storage.argv(b[storage.BINARY], kubeconfig, config, pod)

    def _kubelet_argv(self, b: NodeBinaries) -> list[str]:
        return [
            str(b["kubelet"]),
            f"--config={self.paths.kubelet_config}",
            f"--kubeconfig={self.paths.etc / 'kubelet.kubeconfig'}",
            f"--hostname-override={layout.NODE_NAME}",
            f"--node-ip={layout.NODE_IP}",
            "--v=1",
        ]

    def _spawn(self, holder: int, name: str, argv: list[str]) -> None:
        # PATH without /usr/bin's containerd 1.6 tools first: only runc, iptables, mount.
        env = {"PATH": f"{self.bin_dir}:/usr/sbin:/usr/bin:/sbin:/bin", "HOME": "/root"}
        proc = processes.spawn(
            name,
            sandbox.nsenter(holder, *argv),
            self._logs / f"{name}.log",
            detached=self.detached,
            env=env,
            cgroup_procs=cgroups.procs_files(),
            executable=argv[0],
        )
        self.procs.append(proc)

    def _spawn_forwarder(self, holder: int) -> None:
        argv = [
            # The file itself, not `-m`: only the standard library is loaded (~10 MB
            # instead of the package's imports).
            sys.executable,
            "-I",
            str(Path(forward.__file__)),
            str(holder),
            layout.NODE_IP,
            str(layout.APISERVER_PORT),
            str(self.apiserver_port),
        ]
        log = self._logs / "apiserver-forwarder.log"
        self.procs.append(processes.spawn("apiserver-forwarder", argv, log, detached=self.detached))

    def _wait_containerd(self, holder: int, ctr: Path, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while True:
            try:
                sandbox.run(images.ctr_argv(holder, ctr, "version"), timeout=5)
                return
            except DevClusterError:
                if time.monotonic() > deadline:
                    raise DevClusterError(
                        "containerd did not answer; its log:\n"
                        + processes.log_tail(self._logs / "containerd.log")
                    ) from None
                time.sleep(0.1)


def _ready(node: client.V1Node) -> bool:
    conditions = (node.status.conditions if node.status else None) or []
    return any(c.type == "Ready" and c.status == "True" for c in conditions)


def wait_ready(
    api: client.ApiClient, deadline: float, check_alive: Callable[[], None], logs: Path
) -> None:
    """Until the node is Ready and the node-lifecycle controller lifted its taints."""
    core = client.CoreV1Api(api)
    while True:
        node = next(
            iter(core.list_node(field_selector=f"metadata.name={layout.NODE_NAME}").items), None
        )
        if node is not None and _ready(node) and not (node.spec and node.spec.taints):
            return
        check_alive()
        if time.monotonic() > deadline:
            raise DevClusterError(
                f"node {layout.NODE_NAME} not Ready in time; last lines of the kubelet log:\n"
                + processes.log_tail(logs / "kubelet.log")
            )
        time.sleep(0.1)


def stop(procs: Sequence[ServerProcess], grace: float = processes.DEFAULT_GRACE) -> list[str]:
    """Stop the node's processes in STOP_ORDER, sweep its cgroups, remove the veth;
    return what is left (nothing, normally)."""
    for name in STOP_ORDER:
        processes.stop([p for p in procs if p.name == name], grace)
    return sandbox.teardown()


def publish_services(api: client.ApiClient, with_dns: bool) -> None:
    """The `kubernetes` Service's endpoint on the node, and cluster DNS's Service."""
    discovery = client.DiscoveryV1Api(api)
    slices = [dns.apiserver_endpoint_slice()]
    if with_dns:
        service = dns.service_manifest()
        _created(client.CoreV1Api(api).create_namespaced_service, dns.DNS_NAMESPACE, service)
        slices.append(dns.dns_endpoint_slice())
    for body in slices:
        _created(discovery.create_namespaced_endpoint_slice, body["metadata"]["namespace"], body)


def _created(
    create: Callable[[str, dict[str, Any]], object], ns: str, body: dict[str, Any]
) -> None:
    try:
        create(ns, body)
    except client.ApiException as e:
        if e.status != 409:
            raise
