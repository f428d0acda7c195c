"""Starting one cluster's servers in order: etcd, certificates, kube-apiserver, with
workloads kube-scheduler and kwok, the real node, and once the apiserver is ready the
controller-manager.

Each server is appended to the caller's list as soon as it is spawned, so a launch
that fails half-way leaves the caller knowing exactly what to stop.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

from deployplane.devcluster import audit, processes, readiness
from deployplane.devcluster import commandlines as cmd
from deployplane.devcluster import workloads as workload_parts
from deployplane.devcluster.errors import DevClusterError
from deployplane.devcluster.gitops import find_gitops_tools
from deployplane.devcluster.kubeconfig import write_kubeconfig
from deployplane.devcluster.pki import (
    ADMIN_USER,
    CONTROLLER_MANAGER_USER,
    KWOK_USER,
    SCHEDULER_USER,
    PkiFiles,
    write_pki,
)
from deployplane.devcluster.processes import ServerProcess
from deployplane.devcluster.realnode import node as real_node
from deployplane.devcluster.settings import ClusterSettings
from deployplane.devcluster.tools import Tools


def check_tools(tools: Tools, settings: ClusterSettings) -> None:
    """Refuse before writing anything when a server the settings need is missing."""
    if settings.controller_manager and tools.kube_controller_manager is None:
        raise DevClusterError(f"kube-controller-manager is missing from {tools.bin_dir}")
    if settings.gitops:
        # Argo CD prunes with foreground deletion: only the garbage collector ends it.
        if not settings.controller_manager:
            raise DevClusterError("gitops=True needs the controller-manager")
        find_gitops_tools()
    if not settings.workloads:
        return
    needed = [("kube-scheduler", tools.kube_scheduler)]
    if settings.kwok:
        needed.append(("kwok", tools.kwok))
    missing = [name for name, path in needed if path is None]
    if missing:
        raise DevClusterError(
            f"workloads=True needs {' and '.join(missing)} in {tools.bin_dir}; "
            "build them with `make tools`"
        )
    if not settings.controller_manager:
        raise DevClusterError("workloads=True needs the controller-manager")
    if settings.real_node:
        real_node.check(tools.bin_dir)


@dataclass(frozen=True)
class Launch:
    """One attempt at starting the servers of the cluster in `state_dir` on `ports`."""

    state_dir: Path
    settings: ClusterSettings
    tools: Tools
    ports: cmd.Ports
    procs: list[ServerProcess]

    @property
    def server(self) -> str:
        return f"https://127.0.0.1:{self.ports.apiserver}"

    def run(self) -> None:
        d, tools = self.state_dir, self.tools
        # etcd first: it comes up while the certificates are generated.
        self._spawn("etcd", cmd.etcd_argv(tools.etcd, d / "etcd-data", self.ports))
        pki = write_pki(d / "pki")
        self._kubeconfig("admin", ADMIN_USER, pki.admin_cert, pki.admin_key)
        audit_files = None
        if self.settings.audit_log:
            audit_files = cmd.AuditFiles(policy=d / "audit-policy.yaml", log=d / "audit.log")
            audit.write_policy(audit_files.policy)
        argv = cmd.apiserver_argv(tools.kube_apiserver, self.ports, pki, d / "pki", audit_files)
        self._spawn("kube-apiserver", argv)
        if self.settings.workloads:
            self._workloads(pki)
        if self.settings.real_node:
            real_node.NodeStart(
                d, tools.bin_dir, pki, self.ports.apiserver, self.settings.detached, self.procs
            ).run()
        if self.settings.controller_manager and tools.kube_controller_manager is not None:
            self._wait_apiserver_ready(pki)
            self._controller_manager(tools.kube_controller_manager, pki)

    def _controller_manager(self, binary: Path, pki: PkiFiles) -> None:
        kubeconfig = self._kubeconfig(
            "controller-manager",
            CONTROLLER_MANAGER_USER,
            pki.controller_manager_cert,
            pki.controller_manager_key,
        )
        controllers: tuple[str, ...] = cmd.CONTROLLERS
        if self.settings.workloads:
            controllers += workload_parts.WORKLOAD_CONTROLLERS
        if self.settings.real_node:
            controllers += workload_parts.REAL_NODE_CONTROLLERS
        argv = cmd.controller_manager_argv(binary, kubeconfig, controllers, pki.ca_cert)
        self._spawn("kube-controller-manager", argv)

    def _wait_apiserver_ready(self, pki: PkiFiles) -> None:
        """kube-controller-manager exits when the apiserver is not healthy 10 s after it
        starts: on a loaded machine the apiserver's post-start hooks (the RBAC bootstrap
        roles) take longer than that, so it starts once /readyz answers ok."""
        timeout = self.settings.ready_timeout
        readiness.wait_ok(
            self.server,
            readiness.admin_ssl_context(pki),
            ["/readyz"],
            time.monotonic() + timeout,
            timeout,
            lambda: readiness.check_alive(self.procs),
            self.state_dir / "logs",
        )

    def _workloads(self, pki: PkiFiles) -> None:
        """kube-scheduler and kwok, each with its own identity; both wait for the apiserver."""
        scheduler, kwok = self.tools.kube_scheduler, self.tools.kwok
        if scheduler is None:
            raise DevClusterError("kube-scheduler vanished since the check")
        scheduler_config = self._kubeconfig(
            "scheduler", SCHEDULER_USER, pki.scheduler_cert, pki.scheduler_key
        )
        self._spawn("kube-scheduler", workload_parts.scheduler_argv(scheduler, scheduler_config))
        if not self.settings.kwok:
            return
        if kwok is None:
            raise DevClusterError("kwok vanished since the check")
        kwok_config = self._kubeconfig("kwok", KWOK_USER, pki.kwok_cert, pki.kwok_key)
        kwok_dir = self.state_dir / "kwok"
        stages = workload_parts.write_kwok_config(kwok_dir)
        # kwok also reads ~/.kwok/kwok.yaml when present: point its work dir at ours.
        env = {**os.environ, "KWOK_WORKDIR": str(kwok_dir)}
        self._spawn("kwok", workload_parts.kwok_argv(kwok, kwok_config, stages), env=env)

    def _kubeconfig(self, name: str, user: str, cert: Path, key: Path) -> Path:
        """`<name>.kubeconfig` with the client certificate of `user` (`admin`: the tests')."""
        return write_kubeconfig(
            self.state_dir / f"{name}.kubeconfig",
            server=self.server,
            ca_cert=(self.state_dir / "pki" / "ca.crt").read_bytes(),
            user=user,
            client_cert=cert.read_bytes(),
            client_key=key.read_bytes(),
        )

    def _spawn(self, name: str, argv: list[str], env: dict[str, str] | None = None) -> None:
        log = self.state_dir / "logs" / f"{name}.log"
        proc = processes.spawn(name, argv, log, detached=self.settings.detached, env=env)
        self.procs.append(proc)
