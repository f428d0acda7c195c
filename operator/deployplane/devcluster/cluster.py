"""`DevCluster`: etcd + kube-apiserver (+ kube-controller-manager) on 127.0.0.1.

Run the way controller-runtime's envtest runs them: real binaries, fresh certificates,
free ports, data in a scratch directory. By default no scheduler and no kubelet (pods
stay Pending); the controller-manager runs only the controllers whose absence would
make the API lie: namespace deletion, garbage collection of owned objects, and the
`default` ServiceAccount of each namespace. With `workloads=True` the cluster also
runs kube-scheduler, the workload controllers and kwok with fake nodes, so
Deployments roll out (workloads.py, kwok.py). With `real_node=True` it also runs one
real node, a kubelet, containerd and kube-proxy in a sandbox (realnode/), stopped
first at `stop()`. With `gitops=True`, Argo CD and Flux controllers and a git server
(on `git_port`, else a free port) run beside it (gitops/), once the apiserver is ready.

Here: the cluster's lifecycle; access.py, how it is reached once it runs (its files,
clients, the audit log's counts). launch.py starts the servers (commandlines.py),
readiness.py waits, statefile.py keeps `state.json`, owned.py stops them at exit.

Owned clusters (tests, `with DevCluster() as c:`) are stopped by `stop()`, by `atexit`,
on SIGTERM / SIGHUP, and by the kernel if the Python process dies (see processes.py).
Detached clusters (`deployplane dev cluster up`) outlive the process that started them;
their pids live in `state.json` in the state directory, which `DevCluster.attach()`
reads back.
"""

from __future__ import annotations

import shutil
import ssl
import tempfile
import threading
import time
from pathlib import Path
from types import TracebackType
from typing import Self, TypeVar

from deployplane.devcluster import gitops, launch, owned, processes, readiness, statefile
from deployplane.devcluster import workloads as workload_parts
from deployplane.devcluster.access import ClusterAccess
from deployplane.devcluster.commandlines import free_ports
from deployplane.devcluster.errors import DevClusterError, PortTaken
from deployplane.devcluster.processes import ServerProcess
from deployplane.devcluster.realnode import node as real_node
from deployplane.devcluster.realnode import storage as real_node_storage
from deployplane.devcluster.settings import ClusterSettings
from deployplane.devcluster.tools import Tools, find_tools

__all__ = ["ClusterSettings", "DevCluster", "DevClusterError"]

_PORT_ATTEMPTS = 3
_T = TypeVar("_T")


def _started(value: _T | None) -> _T:
    if value is None:
        raise DevClusterError("the cluster has not been started")
    return value


class DevCluster(ClusterAccess):
    """A local Kubernetes API: `with DevCluster() as cluster: cluster.kubeconfig`."""

    def __init__(
        self,
        state_dir: Path | None = None,
        *,
        controller_manager: bool = True,
        workloads: bool = False,
        nodes: int = workload_parts.DEFAULT_NODES,
        audit_log: bool = False,
        detached: bool = False,
        tools: Tools | None = None,
        ready_timeout: float = 60.0,
        real_node: bool = False,
        gitops: bool = False,
        git_port: int = 0,
    ) -> None:
        self.settings = ClusterSettings(
            controller_manager, workloads or real_node, nodes, audit_log, detached,
            ready_timeout, real_node, gitops, git_port,
        )  # fmt: skip
        self._tools = tools
        self._dir: Path | None = state_dir.resolve() if state_dir is not None else None
        self._scratch = False  # True when _dir is a temp dir we made and must remove
        self._procs: list[ServerProcess] = []
        self._server: str | None = None
        # Re-entrant: a signal handler may call stop() while stop() is running.
        self._stop_lock = threading.RLock()
        # Only a started or attached cluster may delete files in its state directory.
        self._owns_files = False
        # What the real node's stop could not remove (see realnode.node.stop).
        self.node_leftovers: list[str] = []

    @classmethod
    def attach(cls, state_dir: Path) -> DevCluster | None:
        """The cluster recorded in `state_dir/state.json` (running or not), if any, with
        the settings, server and processes recorded there; it may stop them and remove
        its files (a detached cluster's `down`)."""
        state = statefile.read_state(state_dir)
        if state is None:
            return None
        cluster = cls(
            state_dir,
            controller_manager=bool(state.get("controller_manager")),
            workloads=bool(state.get("workloads")),
            nodes=int(state.get("nodes") or workload_parts.DEFAULT_NODES),
            audit_log=state.get("audit_log") is not None,
            detached=True,
            real_node=bool(state.get("real_node")),
            gitops=bool(state.get("gitops")),
        )
        cluster._server = str(state["server"])
        cluster._owns_files = True
        cluster._procs = statefile.recorded_processes(state)
        return cluster

    # ---------------------------------------------------------------- paths
    @property
    def state_dir(self) -> Path:
        return _started(self._dir)

    @property
    def tools(self) -> Tools:
        """The binaries this cluster runs (looked up on first use if not given)."""
        if self._tools is None:
            self._tools = find_tools()
        return self._tools

    @property
    def server(self) -> str:
        return _started(self._server)

    @property
    def server_processes(self) -> list[ServerProcess]:
        return list(self._procs)

    # ---------------------------------------------------------------- lifecycle
    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def start(self) -> Self:
        """Start the servers and return once `/readyz` answers ok."""
        if self._procs:
            raise DevClusterError("already started")
        tools = self.tools
        launch.check_tools(tools, self.settings)
        self._prepare_dir()
        if not self.settings.detached:
            owned.register(self)
        try:
            for attempt in range(_PORT_ATTEMPTS):
                try:
                    self._launch(tools)
                    # Recorded before the wait: an interrupted `up` leaves pids that the
                    # next `up` (or `down`) stops.
                    self._save_state()
                    self._wait_ready()
                    break
                except PortTaken:
                    # Another cluster grabbed a port between our pick and the bind
                    # (parallel test runs): start over on fresh ports and fresh data.
                    if attempt == _PORT_ATTEMPTS - 1:
                        raise
                    self._reset_for_retry()
        except BaseException:
            # Also on Ctrl-C while waiting: a half-started cluster must not linger.
            self.stop()
            raise
        self._save_state()
        return self

    def _prepare_dir(self) -> None:
        if self._dir is None:
            self._dir = Path(tempfile.mkdtemp(prefix="deployplane-dev-"))
            self._scratch = True
            self._owns_files = True
            return
        existing = DevCluster.attach(self._dir)
        if existing is not None and existing.running():
            raise DevClusterError(f"a dev cluster is already running from {self._dir}")
        if existing is not None:
            existing.stop()  # stale: kill survivors (if any) and clear the old files
        self._dir.mkdir(parents=True, exist_ok=True)
        self._owns_files = True

    def _reset_for_retry(self) -> None:
        processes.stop(self._procs)
        self._procs = []
        for entry in ("etcd-data", "logs"):
            shutil.rmtree(self.state_dir / entry, ignore_errors=True)

    def _launch(self, tools: Tools) -> None:
        attempt = launch.Launch(self.state_dir, self.settings, tools, free_ports(), self._procs)
        self._server = attempt.server
        attempt.run()

    # ---------------------------------------------------------------- readiness
    def _wait_ready(self) -> None:
        deadline = time.monotonic() + self.settings.ready_timeout
        # /readyz covers etcd, RBAC bootstrap roles and the CRD machinery. With the
        # controller-manager, also wait for the `default` ServiceAccount: it proves
        # the controllers run, and pods cannot be created in a namespace without it.
        checks = ["/readyz"]
        if self.settings.controller_manager:
            checks.append("/api/v1/namespaces/default/serviceaccounts/default")
        readiness.wait_ok(
            self.server,
            readiness.admin_ssl_context(self._pki()),
            checks,
            deadline,
            self.settings.ready_timeout,
            self._check_alive,
            self.state_dir / "logs",
        )
        if self.settings.workloads:
            self._wait_nodes(deadline)
        if self.settings.real_node:
            with self.admin() as api:
                real_node.publish_services(api, real_node.has_dns(self.tools.bin_dir))
                real_node_storage.install(api)
                real_node.wait_ready(api, deadline, self._check_alive, self.state_dir / "logs")
        if self.settings.gitops:
            start = gitops.GitOpsLaunch(
                self.state_dir, self.kubeconfig, self.tools.bin_dir, gitops.find_gitops_tools(),
                self.settings.detached, self._procs, gitops.Ports.pick(self.settings.git_port),
            )  # fmt: skip
            with self.admin() as api:
                try:
                    # Its own ready_timeout: the controllers start once the cluster is ready.
                    start.run(api, time.monotonic() + self.settings.ready_timeout)
                finally:
                    self._save_state()  # the processes spawned, for a `down` after a failure

    def _check_alive(self) -> None:
        readiness.check_alive(self._procs)

    def _wait_nodes(self, deadline: float) -> None:
        """Create the fake nodes and wait until kwok has made every one Ready."""
        names = workload_parts.node_names(self.settings.nodes)
        with self.admin() as api:
            workload_parts.install(api, names)
            try:
                workload_parts.wait_nodes_ready(api, names, deadline, self._check_alive)
            except TimeoutError as e:
                raise DevClusterError(
                    f"{e}; last lines of the kwok log:\n"
                    + processes.log_tail(self.state_dir / "logs" / "kwok.log")
                ) from e

    def ready(self) -> bool:
        """True when every server runs and the apiserver's /readyz answers ok."""
        if not self.running():
            return False
        try:
            ctx = readiness.admin_ssl_context(self._pki())
        except (OSError, ssl.SSLError):
            return False  # certificates gone: a half-cleaned state directory
        return readiness.get_status(self.server, "/readyz", ctx) == 200

    def running(self) -> bool:
        return bool(self._procs) and all(p.alive() for p in self._procs)

    # ---------------------------------------------------------------- state file
    def _save_state(self) -> None:
        s = self.settings
        fields = {
            "server": self.server,
            "kubeconfig": str(self.kubeconfig),
            "audit_log": str(self.audit_log) if s.audit_log else None,
            "controller_manager": s.controller_manager,
            "workloads": s.workloads,
            "nodes": s.nodes,
            "detached": s.detached,
            "real_node": s.real_node,
            "gitops": s.gitops,
        }
        statefile.write_state(self.state_dir, fields, self._procs)

    # ---------------------------------------------------------------- stop
    def stop(self, grace: float = processes.DEFAULT_GRACE) -> None:
        """Stop the servers (apiserver and controllers first, etcd last), remove files.

        Idempotent. A scratch directory is removed whole; a given state directory
        loses only what the cluster put there.
        """
        with self._stop_lock:
            owned.unregister(self)
            if self.settings.real_node:
                # First, while the apiserver still answers the kubelet.
                node = [p for p in self._procs if p.name in real_node.NODE_PROCESSES]
                self.node_leftovers = real_node.stop(node, grace)
            etcd = [p for p in self._procs if p.name == "etcd"]
            others = [
                p
                for p in self._procs
                if p.name != "etcd" and p.name not in real_node.NODE_PROCESSES
            ]
            processes.stop(others, grace)
            processes.stop(etcd, grace)
            self._procs = []
            if self._dir is None or not self._owns_files:
                return
            self._owns_files = False
            if self._scratch:
                shutil.rmtree(self._dir, ignore_errors=True)
            else:
                statefile.remove_owned(self._dir)
