"""`DevCluster`: etcd + kube-apiserver (+ kube-controller-manager) on 127.0.0.1.

Run the way controller-runtime's envtest runs them: real binaries, fresh certificates,
free ports, data in a scratch directory. By default no scheduler and no kubelet (pods
stay Pending); the controller-manager runs only the controllers whose absence would
make the API lie: namespace deletion, garbage collection of owned objects, and the
`default` ServiceAccount of each namespace. With `workloads=True` the cluster also
runs kube-scheduler, the workload controllers and kwok with fake nodes, so
Deployments roll out (workloads.py, kwok.py).

Owned clusters (tests, `with DevCluster() as c:`) are stopped by `stop()`, by `atexit`,
on SIGTERM / SIGHUP, and by the kernel if the Python process dies (see processes.py).
Detached clusters (`deployplane dev cluster up`) outlive the process that started them;
their pids live in `state.json` in the state directory, which `attach()` reads back.
"""

from __future__ import annotations

import atexit
import contextlib
import datetime as dt
import http.client
import json
import os
import shutil
import signal
import socket
import ssl
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import FrameType, TracebackType
from typing import Any, Self

from kubernetes import client

from deployplane.devcluster import audit, processes
from deployplane.devcluster import workloads as workload_parts
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
from deployplane.devcluster.serviceaccounts import write_service_account_kubeconfig
from deployplane.devcluster.tools import Tools, find_tools

SERVICE_ACCOUNT_ISSUER = "https://kubernetes.default.svc.cluster.local"
SERVICE_CLUSTER_IP_RANGE = "10.0.0.0/24"
# Short names are the controller-manager's aliases for namespace-controller,
# garbage-collector-controller and serviceaccount-controller.
CONTROLLERS = ("namespace", "garbagecollector", "serviceaccount")
STATE_FILE = "state.json"
# Everything a cluster writes into its state directory; `down` removes exactly these,
# so pointing --state-dir at a directory with other content never deletes that content.
_OWNED_ENTRIES = (
    "pki",
    "etcd-data",
    "logs",
    "admin.kubeconfig",
    "controller-manager.kubeconfig",
    "scheduler.kubeconfig",
    "kwok.kubeconfig",
    "kwok",
    "audit-policy.yaml",
    "audit.log",
    STATE_FILE,
)


class DevClusterError(RuntimeError):
    """The dev cluster could not be started, or a command needs one that is not running."""


class _PortTaken(DevClusterError):
    """A server could not bind the free port picked for it: someone took it first."""


_PORT_ATTEMPTS = 3


@dataclass(frozen=True)
class _Ports:
    etcd_client: int
    etcd_peer: int
    apiserver: int


def _free_ports(count: int) -> list[int]:
    # Hold all sockets open until every port is picked, so the ports are distinct.
    with contextlib.ExitStack() as stack:
        socks = [stack.enter_context(socket.socket()) for _ in range(count)]
        for s in socks:
            s.bind(("127.0.0.1", 0))
        return [int(s.getsockname()[1]) for s in socks]


class DevCluster:
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
    ) -> None:
        self._requested_dir = state_dir
        self.controller_manager = controller_manager
        # Scheduler + workload controllers + kwok with `nodes` fake nodes.
        self.workloads = workloads
        self.nodes = nodes
        self.audit_enabled = audit_log
        self.detached = detached
        self._tools = tools
        self.ready_timeout = ready_timeout
        self._dir: Path | None = state_dir.resolve() if state_dir is not None else None
        self._scratch = False  # True when _dir is a temp dir we made and must remove
        self._procs: list[ServerProcess] = []
        self._server: str | None = None
        # Re-entrant: a signal handler may call stop() while stop() is running.
        self._stop_lock = threading.RLock()
        # Only a started or attached cluster may delete files in its state directory.
        self._owns_files = False

    # ---------------------------------------------------------------- paths
    @property
    def state_dir(self) -> Path:
        if self._dir is None:
            raise DevClusterError("the cluster has not been started")
        return self._dir

    @property
    def tools(self) -> Tools:
        """The binaries this cluster runs (looked up on first use if not given)."""
        if self._tools is None:
            self._tools = find_tools()
        return self._tools

    @property
    def kubeconfig(self) -> Path:
        """Admin kubeconfig (client certificate in group system:masters)."""
        return self.state_dir / "admin.kubeconfig"

    @property
    def audit_log(self) -> Path:
        return self.state_dir / "audit.log"

    @property
    def ca_cert(self) -> Path:
        return self.state_dir / "pki" / "ca.crt"

    @property
    def server(self) -> str:
        if self._server is None:
            raise DevClusterError("the cluster has not been started")
        return self._server

    @property
    def server_processes(self) -> list[ServerProcess]:
        return list(self._procs)

    def _pki(self) -> PkiFiles:
        d = self.state_dir / "pki"
        return PkiFiles(
            ca_cert=d / "ca.crt",
            serving_cert=d / "apiserver.crt",
            serving_key=d / "apiserver.key",
            admin_cert=d / "admin.crt",
            admin_key=d / "admin.key",
            controller_manager_cert=d / "kcm.crt",
            controller_manager_key=d / "kcm.key",
            scheduler_cert=d / "scheduler.crt",
            scheduler_key=d / "scheduler.key",
            kwok_cert=d / "kwok.crt",
            kwok_key=d / "kwok.key",
            service_account_key=d / "sa.key",
            service_account_pub=d / "sa.pub",
        )

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
        if self.controller_manager and tools.kube_controller_manager is None:
            raise DevClusterError(f"kube-controller-manager is missing from {tools.bin_dir}")
        if self.workloads:
            self._check_workload_tools(tools)
        self._prepare_dir()
        if not self.detached:
            _register(self)
        try:
            for attempt in range(_PORT_ATTEMPTS):
                try:
                    self._launch(tools)
                    self._wait_ready()
                    break
                except _PortTaken:
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
        existing = attach(self._dir)
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
        d = self.state_dir
        ports = _Ports(*_free_ports(3))
        self._server = f"https://127.0.0.1:{ports.apiserver}"
        # etcd first: it comes up while the certificates are generated.
        self._procs.append(self._spawn("etcd", self._etcd_argv(tools, ports)))
        pki = write_pki(d / "pki")
        write_kubeconfig(
            self.kubeconfig,
            server=self.server,
            ca_cert=pki.ca_cert.read_bytes(),
            user=ADMIN_USER,
            client_cert=pki.admin_cert.read_bytes(),
            client_key=pki.admin_key.read_bytes(),
        )
        if self.audit_enabled:
            audit.write_policy(d / "audit-policy.yaml")
        self._procs.append(self._spawn("kube-apiserver", self._apiserver_argv(tools, ports, pki)))
        if self.controller_manager and tools.kube_controller_manager is not None:
            kcm_config = self._component_kubeconfig(
                "controller-manager",
                CONTROLLER_MANAGER_USER,
                pki.controller_manager_cert,
                pki.controller_manager_key,
            )
            controllers: tuple[str, ...] = CONTROLLERS
            if self.workloads:
                controllers += workload_parts.WORKLOAD_CONTROLLERS
            # It retries until the apiserver answers, so it can start right away.
            argv = [
                str(tools.kube_controller_manager),
                f"--kubeconfig={kcm_config}",
                f"--controllers={','.join(controllers)}",
                "--leader-elect=false",
                "--use-service-account-credentials=false",
                # No serving endpoint: nothing scrapes it, and it would need a port.
                "--secure-port=0",
                f"--root-ca-file={pki.ca_cert}",
                # The default 20 requests/s throttles a rollout of hundreds of pods.
                "--kube-api-qps=200",
                "--kube-api-burst=400",
            ]
            self._procs.append(self._spawn("kube-controller-manager", argv))
        if self.workloads:
            self._launch_workloads(tools, pki)

    def _component_kubeconfig(self, name: str, user: str, cert: Path, key: Path) -> Path:
        """A kubeconfig with the client certificate of one control-plane component."""
        return write_kubeconfig(
            self.state_dir / f"{name}.kubeconfig",
            server=self.server,
            ca_cert=self.ca_cert.read_bytes(),
            user=user,
            client_cert=cert.read_bytes(),
            client_key=key.read_bytes(),
        )

    def _check_workload_tools(self, tools: Tools) -> None:
        missing = [
            name
            for name, path in (("kube-scheduler", tools.kube_scheduler), ("kwok", tools.kwok))
            if path is None
        ]
        if missing:
            raise DevClusterError(
                f"workloads=True needs {' and '.join(missing)} in {tools.bin_dir}; "
                "build them with `make tools`"
            )
        if not self.controller_manager:
            raise DevClusterError("workloads=True needs the controller-manager")

    def _launch_workloads(self, tools: Tools, pki: PkiFiles) -> None:
        """kube-scheduler and kwok, each with its own identity; both wait for the apiserver."""
        scheduler, kwok = tools.kube_scheduler, tools.kwok
        if scheduler is None or kwok is None:
            raise DevClusterError("kube-scheduler or kwok vanished since the check")
        scheduler_config = self._component_kubeconfig(
            "scheduler", SCHEDULER_USER, pki.scheduler_cert, pki.scheduler_key
        )
        argv = workload_parts.scheduler_argv(scheduler, scheduler_config)
        self._procs.append(self._spawn("kube-scheduler", argv))
        kwok_config = self._component_kubeconfig("kwok", KWOK_USER, pki.kwok_cert, pki.kwok_key)
        kwok_dir = self.state_dir / "kwok"
        stages = workload_parts.write_kwok_config(kwok_dir)
        # kwok also reads ~/.kwok/kwok.yaml when present: point its work dir at ours.
        env = {**os.environ, "KWOK_WORKDIR": str(kwok_dir)}
        argv = workload_parts.kwok_argv(kwok, kwok_config, stages)
        self._procs.append(self._spawn("kwok", argv, env=env))

    def _spawn(
        self, name: str, argv: list[str], env: dict[str, str] | None = None
    ) -> ServerProcess:
        log = self.state_dir / "logs" / f"{name}.log"
        return processes.spawn(name, argv, log, detached=self.detached, env=env)

    def _etcd_argv(self, tools: Tools, ports: _Ports) -> list[str]:
        client_url = f"http://127.0.0.1:{ports.etcd_client}"
        peer_url = f"http://127.0.0.1:{ports.etcd_peer}"
        return [
            str(tools.etcd),
            "--name=dev",
            f"--data-dir={self.state_dir / 'etcd-data'}",
            f"--listen-client-urls={client_url}",
            f"--advertise-client-urls={client_url}",
            f"--listen-peer-urls={peer_url}",
            f"--initial-advertise-peer-urls={peer_url}",
            f"--initial-cluster=dev={peer_url}",
            # Throwaway data: skipping fsync makes every write (and so startup) faster.
            "--unsafe-no-fsync",
            "--log-level=warn",
        ]

    def _apiserver_argv(self, tools: Tools, ports: _Ports, pki: PkiFiles) -> list[str]:
        argv = [
            str(tools.kube_apiserver),
            "--bind-address=127.0.0.1",
            "--advertise-address=127.0.0.1",
            f"--secure-port={ports.apiserver}",
            f"--etcd-servers=http://127.0.0.1:{ports.etcd_client}",
            f"--cert-dir={self.state_dir / 'pki'}",
            f"--tls-cert-file={pki.serving_cert}",
            f"--tls-private-key-file={pki.serving_key}",
            f"--client-ca-file={pki.ca_cert}",
            f"--service-account-issuer={SERVICE_ACCOUNT_ISSUER}",
            f"--service-account-key-file={pki.service_account_pub}",
            f"--service-account-signing-key-file={pki.service_account_key}",
            f"--service-cluster-ip-range={SERVICE_CLUSTER_IP_RANGE}",
            "--authorization-mode=RBAC,Node",
            "--allow-privileged=true",
            # The `kubernetes` Endpoints would point at 127.0.0.1, which validation
            # refuses (loopback); nothing in-cluster needs to reach the apiserver.
            "--endpoint-reconciler-type=none",
            # /debug/pprof for `DEPLOYPLANE_APISERVER_PROFILING=1` (finding where the
            # apiserver's CPU goes under a benchmark); off otherwise.
            f"--profiling={str(os.environ.get('DEPLOYPLANE_APISERVER_PROFILING') == '1').lower()}",
        ]
        if self.audit_enabled:
            argv += [
                f"--audit-policy-file={self.state_dir / 'audit-policy.yaml'}",
                f"--audit-log-path={self.audit_log}",
                "--audit-log-format=json",
                "--audit-log-mode=blocking",
            ]
        return argv

    # ---------------------------------------------------------------- readiness
    def _ssl_context(self) -> ssl.SSLContext:
        pki = self._pki()
        ctx = ssl.create_default_context(cafile=str(pki.ca_cert))
        ctx.load_cert_chain(str(pki.admin_cert), str(pki.admin_key))
        return ctx

    def _get(self, path: str, ctx: ssl.SSLContext, timeout: float = 2.0) -> int:
        """HTTP status of an admin GET, or 0 when the apiserver does not answer yet."""
        port = int(self.server.rsplit(":", 1)[1])
        conn = http.client.HTTPSConnection("127.0.0.1", port, context=ctx, timeout=timeout)
        try:
            conn.request("GET", path)
            response = conn.getresponse()
            response.read()
            return response.status
        except OSError:
            return 0
        finally:
            conn.close()

    def _wait_ready(self) -> None:
        ctx = self._ssl_context()
        deadline = time.monotonic() + self.ready_timeout
        # /readyz covers etcd, RBAC bootstrap roles and the CRD machinery. With the
        # controller-manager, also wait for the `default` ServiceAccount: it proves
        # the controllers run, and pods cannot be created in a namespace without it.
        checks = ["/readyz"]
        if self.controller_manager:
            checks.append("/api/v1/namespaces/default/serviceaccounts/default")
        for path in checks:
            while self._get(path, ctx) != 200:
                self._check_alive()
                if time.monotonic() > deadline:
                    raise DevClusterError(
                        f"{path} not ok after {self.ready_timeout:.0f}s; logs in "
                        f"{self.state_dir / 'logs'}:\n"
                        + processes.log_tail(self.state_dir / "logs" / "kube-apiserver.log")
                    )
                time.sleep(0.05)
        if self.workloads:
            self._wait_nodes(deadline)

    def _check_alive(self) -> None:
        for proc in self._procs:
            if not proc.alive():
                error = (
                    _PortTaken
                    if "address already in use" in processes.log_tail(proc.log)
                    else DevClusterError
                )
                raise error(
                    f"{proc.name} exited during startup; last lines of {proc.log}:\n"
                    + processes.log_tail(proc.log)
                )

    def _wait_nodes(self, deadline: float) -> None:
        """Create the fake nodes and wait until kwok has made every one Ready."""
        names = workload_parts.node_names(self.nodes)
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
            ctx = self._ssl_context()
        except (OSError, ssl.SSLError):
            return False  # certificates gone: a half-cleaned state directory
        return self._get("/readyz", ctx) == 200

    def running(self) -> bool:
        return bool(self._procs) and all(p.alive() for p in self._procs)

    # ---------------------------------------------------------------- state file
    def _save_state(self) -> None:
        state = {
            "server": self.server,
            "kubeconfig": str(self.kubeconfig),
            "audit_log": str(self.audit_log) if self.audit_enabled else None,
            "controller_manager": self.controller_manager,
            "workloads": self.workloads,
            "nodes": self.nodes,
            "detached": self.detached,
            "started_at": dt.datetime.now(dt.UTC).isoformat(),
            "processes": [
                {"name": p.name, "pid": p.pid, "executable": p.executable, "log": str(p.log)}
                for p in self._procs
            ],
        }
        (self.state_dir / STATE_FILE).write_text(json.dumps(state, indent=2) + "\n")

    # ---------------------------------------------------------------- stop
    def stop(self, grace: float = processes.DEFAULT_GRACE) -> None:
        """Stop the servers (apiserver and controllers first, etcd last), remove files.

        Idempotent. A scratch directory is removed whole; a given state directory
        loses only what the cluster put there.
        """
        with self._stop_lock:
            _unregister(self)
            etcd = [p for p in self._procs if p.name == "etcd"]
            others = [p for p in self._procs if p.name != "etcd"]
            processes.stop(others, grace)
            processes.stop(etcd, grace)
            self._procs = []
            if self._dir is None or not self._owns_files:
                return
            self._owns_files = False
            if self._scratch:
                shutil.rmtree(self._dir, ignore_errors=True)
            else:
                for entry in _OWNED_ENTRIES:
                    path = self._dir / entry
                    if path.is_dir():
                        shutil.rmtree(path, ignore_errors=True)
                    else:
                        path.unlink(missing_ok=True)
                with contextlib.suppress(OSError):
                    self._dir.rmdir()  # only if now empty

    # ---------------------------------------------------------------- clients
    def api_client(self, token: str | None = None) -> client.ApiClient:
        """A new `ApiClient`: admin (client certificate), or bearer `token`. Close it."""
        pki = self._pki()
        cfg = client.Configuration(host=self.server, ssl_ca_cert=str(pki.ca_cert))
        if token is None:
            cfg.cert_file = str(pki.admin_cert)
            cfg.key_file = str(pki.admin_key)
        else:
            cfg.api_key = {"authorization": token}
            cfg.api_key_prefix = {"authorization": "Bearer"}
        return client.ApiClient(cfg)

    @contextlib.contextmanager
    def admin(self) -> Iterator[client.ApiClient]:
        """An admin `ApiClient` closed on exit."""
        with contextlib.closing(self.api_client()) as api:
            yield api

    def service_account_kubeconfig(
        self,
        namespace: str,
        name: str,
        path: Path | None = None,
        *,
        lifetime: dt.timedelta = dt.timedelta(hours=24),
    ) -> Path:
        """Kubeconfig with a TokenRequest token for an existing ServiceAccount."""
        target = path or self.state_dir / "serviceaccounts" / f"{namespace}.{name}.kubeconfig"
        with self.admin() as api:
            return write_service_account_kubeconfig(
                api,
                namespace,
                name,
                target,
                server=self.server,
                ca_cert=self.ca_cert.read_bytes(),
                lifetime=lifetime,
            )

    # ---------------------------------------------------------------- audit
    def count_writes(
        self,
        since: dt.datetime | None = None,
        *,
        user: str | None = None,
        namespace: str | None = None,
    ) -> dict[str, int]:
        """Write requests per resource since `since` (see `audit.count_requests`)."""
        self._require_audit()
        return audit.count_writes(self.audit_log, since, user=user, namespace=namespace)

    def count_requests(self, **filters: Any) -> dict[str, int]:
        self._require_audit()
        return audit.count_requests(self.audit_log, **filters)

    def _require_audit(self) -> None:
        if not self.audit_enabled:
            raise DevClusterError("start the cluster with audit_log=True to count requests")


def attach(state_dir: Path) -> DevCluster | None:
    """The cluster recorded in `state_dir/state.json` (running or not), if any."""
    try:
        state = json.loads((state_dir / STATE_FILE).read_text())
    except (OSError, ValueError):
        return None
    cluster = DevCluster(
        state_dir,
        controller_manager=bool(state.get("controller_manager")),
        workloads=bool(state.get("workloads")),
        nodes=int(state.get("nodes") or workload_parts.DEFAULT_NODES),
        audit_log=state.get("audit_log") is not None,
        detached=True,
    )
    cluster._server = str(state["server"])
    cluster._owns_files = True
    cluster._procs = [
        ServerProcess(
            name=str(p["name"]),
            pid=int(p["pid"]),
            executable=str(p["executable"]),
            log=Path(p["log"]),
        )
        for p in state.get("processes", [])
    ]
    return cluster


# -------------------------------------------------------------------- cleanup of owned clusters
# A process-wide registry is the one place signal handlers and atexit can find the
# clusters to stop; it only ever holds clusters this process started and owns.
_owned: set[DevCluster] = set()
_registry_lock = threading.Lock()
_hooks_installed = False


def _stop_owned() -> None:
    for cluster in list(_owned):
        cluster.stop()


def _on_signal(signum: int, frame: FrameType | None) -> None:
    _stop_owned()
    # Then die of the same signal, as the process would have without us.
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)


def _register(cluster: DevCluster) -> None:
    global _hooks_installed
    with _registry_lock:
        _owned.add(cluster)
        if _hooks_installed:
            return
        _hooks_installed = True
        atexit.register(_stop_owned)
        # SIGINT already unwinds as KeyboardInterrupt (context managers, fixtures);
        # SIGTERM and SIGHUP would end the process without running any cleanup.
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGTERM, signal.SIGHUP):
                if signal.getsignal(sig) is signal.SIG_DFL:
                    signal.signal(sig, _on_signal)


def _unregister(cluster: DevCluster) -> None:
    with _registry_lock:
        _owned.discard(cluster)
