"""Starting the GitOps controllers and the git server beside a running dev cluster.

Host processes against the apiserver, not pods: nothing here has a registry to pull
Argo CD's or Flux's images from, a real node is one per machine and slow to start, and
six host processes cost what the controllers themselves cost. Users run the same
binaries as pods; the controllers cannot tell the difference (Argo CD's in-cluster
destination and Flux's client both come from KUBECONFIG, with the admin identity that
an install's ClusterRole gives them).

Order: the objects the controllers need (namespaces, CRDs, argocd-cm, the AppProject)
are applied first, then redis, the repo-server, the application-controller, the two
Flux controllers and the git server start, each appended to the cluster's process list
as soon as it is spawned (so a failure half-way leaves the cluster knowing what to
stop); then each health endpoint is waited for and `gitops.json` is written.
"""

from __future__ import annotations

import contextlib
import json
import socket
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

from kubernetes import client

from deployplane.devcluster import processes, readiness
from deployplane.devcluster.errors import DevClusterError
from deployplane.devcluster.gitops import argocd, flux
from deployplane.devcluster.gitops.tools import GitOpsTools
from deployplane.devcluster.manifests import Applier
from deployplane.devcluster.processes import ServerProcess

INFO_FILE = "gitops.json"
GIT_DIR = "git"
WORK_DIR = "gitops"
PROCESS_NAMES = (
    "argocd-redis",
    "argocd-repo-server",
    "argocd-application-controller",
    "source-controller",
    "kustomize-controller",
    "git-server",
)
# Argo CD's name for the cluster it runs in; Applications name it as their destination.
IN_CLUSTER_SERVER = "https://kubernetes.default.svc"


@dataclass(frozen=True)
class GitOpsInfo:
    """What `gitops.json` says: where to push, and where each tool's objects go."""

    git_url: str
    git_root: str
    argocd_namespace: str
    flux_namespace: str
    argocd_destination: str


def read_info(state_dir: Path) -> GitOpsInfo | None:
    """The `gitops.json` of a cluster started with GitOps, if any."""
    try:
        return GitOpsInfo(**json.loads((state_dir / INFO_FILE).read_text()))
    except (OSError, ValueError, TypeError):
        return None


@dataclass(frozen=True)
class Ports:
    """The ports on 127.0.0.1 of one launch, all free when picked."""

    redis: int
    repo_server: int
    repo_server_metrics: int
    controller_metrics: int
    storage: int
    source_metrics: int
    source_health: int
    kustomize_metrics: int
    kustomize_health: int
    git: int

    @classmethod
    def pick(cls, git: int = 0) -> Ports:
        """Free ports; the git server's `git` when given (one a user's files name)."""
        # Every socket held open until all are bound, so the ports are distinct.
        with contextlib.ExitStack() as stack:
            socks = [stack.enter_context(socket.socket()) for _ in fields(cls)]
            for f, s in zip(fields(cls), socks, strict=True):
                port = git if f.name == "git" else 0
                if port:  # as the git server binds it: a previous run's TIME_WAIT is no owner
                    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                try:
                    s.bind(("127.0.0.1", port))
                except OSError as e:
                    raise DevClusterError(f"port {port} of 127.0.0.1 is taken: {e}") from e
            return cls(*[int(s.getsockname()[1]) for s in socks])


@dataclass
class GitOpsLaunch:
    """One start of the GitOps processes for the cluster in `state_dir`."""

    state_dir: Path
    kubeconfig: Path
    k8s_bin: Path
    tools: GitOpsTools
    detached: bool
    procs: list[ServerProcess]
    ports: Ports = field(default_factory=Ports.pick)

    @property
    def git_root(self) -> Path:
        return self.state_dir / GIT_DIR

    def run(self, api: client.ApiClient, deadline: float) -> GitOpsInfo:
        Applier(api).apply(argocd.objects(self.tools) + flux.objects(self.tools))
        for name, check in self._spawn_all():
            self._wait(name, check, deadline)
        info = GitOpsInfo(
            git_url=f"http://127.0.0.1:{self.ports.git}",
            git_root=str(self.git_root),
            argocd_namespace=argocd.NAMESPACE,
            flux_namespace=flux.NAMESPACE,
            argocd_destination=IN_CLUSTER_SERVER,
        )
        (self.state_dir / INFO_FILE).write_text(json.dumps(asdict(info), indent=2) + "\n")
        return info

    def _spawn_all(self) -> list[tuple[str, Callable[[], bool]]]:
        """Spawn every process; the readiness check of each, by name."""
        p, work, tools = self.ports, self.state_dir / WORK_DIR, self.tools
        redis, repo = f"127.0.0.1:{p.redis}", f"127.0.0.1:{p.repo_server}"
        argo_env = argocd.env(tools, self.kubeconfig, work / "argocd", self.k8s_bin)
        self._spawn("argocd-redis", argocd.redis_argv(tools.redis_server, p.redis, work / "redis"))
        self._spawn(
            "argocd-repo-server",
            argocd.repo_server_argv(tools, p.repo_server, p.repo_server_metrics, redis),
            {**argo_env, "ARGOCD_BINARY_NAME": "argocd-repo-server"},
        )
        self._spawn(
            "argocd-application-controller",
            argocd.controller_argv(tools, self.kubeconfig, repo, p.controller_metrics, redis),
            {**argo_env, "ARGOCD_BINARY_NAME": "argocd-application-controller"},
        )
        flux_env = flux.env(self.kubeconfig, work / "flux")
        storage = work / "flux" / "storage"
        source = flux.source_controller_argv
        self._spawn(
            "source-controller",
            source(tools, storage, p.storage, p.source_metrics, p.source_health),
            flux_env,
        )
        self._spawn(
            "kustomize-controller",
            flux.kustomize_controller_argv(tools, p.kustomize_metrics, p.kustomize_health),
            flux_env,
        )
        self.git_root.mkdir(parents=True, exist_ok=True)
        server = [sys.executable, "-m", "deployplane.devcluster.gitops.gitserver"]
        self._spawn("git-server", [*server, "--root", str(self.git_root), "--port", str(p.git)])
        return [
            ("argocd-redis", lambda: _redis_pong(p.redis)),
            ("argocd-repo-server", lambda: _http_ok(p.repo_server_metrics, "/healthz")),
            ("argocd-application-controller", lambda: _http_ok(p.controller_metrics, "/healthz")),
            ("source-controller", lambda: _http_ok(p.source_health, "/readyz")),
            ("kustomize-controller", lambda: _http_ok(p.kustomize_health, "/readyz")),
            ("git-server", lambda: _http_answers(p.git)),
        ]

    def _spawn(self, name: str, argv: list[str], env: dict[str, str] | None = None) -> None:
        log = self.state_dir / "logs" / f"{name}.log"
        self.procs.append(processes.spawn(name, argv, log, detached=self.detached, env=env))

    def _wait(self, name: str, check: Callable[[], bool], deadline: float) -> None:
        while not check():
            readiness.check_alive(self.procs)
            if time.monotonic() > deadline:
                log = self.state_dir / "logs" / f"{name}.log"
                raise DevClusterError(
                    f"{name} not ready in time; last lines of {log}:\n{processes.log_tail(log)}"
                )
            time.sleep(0.1)


def _http_ok(port: int, path: str) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=2) as answer:
            return int(answer.status) == 200
    except (OSError, urllib.error.URLError):
        return False


def _http_answers(port: int) -> bool:
    """Any HTTP answer (http-backend says 404 to `/`: the server is up)."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=2):
            return True
    except urllib.error.HTTPError:
        return True
    except OSError:
        return False


def _redis_pong(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=2) as conn:
            conn.sendall(b"PING\r\n")
            return conn.recv(16).startswith(b"+PONG")
    except OSError:
        return False
