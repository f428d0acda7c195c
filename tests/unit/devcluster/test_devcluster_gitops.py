"""The dev cluster's GitOps parts without a cluster: Argo CD's objects (the chart's health
check in argocd-cm), every server's address, the tools' lookup, and the git server
serving real pushes and clones (git's own http-backend)."""

from __future__ import annotations

import dataclasses
import shutil
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from deployplane.devcluster import processes, statefile
from deployplane.devcluster.errors import DevClusterError
from deployplane.devcluster.gitops import argocd, flux, gitserver, launch
from deployplane.devcluster.gitops.tools import ENV_GITOPS_TOOLS, GitOpsTools, find_gitops_tools

CHART = Path(__file__).resolve().parents[3] / "charts" / "deployplane"


def fake_tools(root: Path) -> GitOpsTools:
    """A tools directory laid out as tools/gitops/build.sh writes it, with tiny manifests."""
    crds, config = root / "manifests" / "argocd" / "crds", root / "manifests" / "argocd" / "config"
    crds.mkdir(parents=True)
    config.mkdir(parents=True)
    crd = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition"}
    (crds / "application-crd.yaml").write_text(yaml.safe_dump({**crd, "metadata": {"name": "a"}}))
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "argocd-cm"}}
    upstream = {"resource.customizations.ignoreResourceUpdates.all": "jsonPointers: [/status]"}
    (config / "argocd-cm.yaml").write_text(yaml.safe_dump({**cm, "data": upstream}))
    rbac = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "argocd-rbac-cm"}}
    (config / "argocd-rbac-cm.yaml").write_text(yaml.safe_dump(rbac))
    for controller in flux.CONTROLLERS:
        (root / "manifests" / controller).mkdir(parents=True)
        (root / "manifests" / controller / "crd.yaml").write_text(yaml.safe_dump(crd))
    return GitOpsTools(
        root=root, redis_server=Path("/usr/bin/redis-server"), git=Path("/usr/bin/git")
    )


def test_argocd_cm_carries_the_charts_health_check_for_every_kind_the_chart_ships() -> None:
    checks = argocd.health_customizations()
    kinds = {
        yaml.safe_load(p.read_text())["spec"]["names"]["kind"]
        for p in (CHART / "crds").glob("*.yaml")
    }
    assert set(checks) == {f"resource.customizations.health.deployplane.io_{k}" for k in kinds}
    assert {"AgentDeployment", "Listener", "ControlPlaneConnection"} <= kinds
    assert set(checks.values()) == {(CHART / "argocd" / "health.lua").read_text()}


def test_argocd_objects_keep_upstreams_configuration_and_add_the_health_checks(
    tmp_path: Path,
) -> None:
    docs = argocd.objects(fake_tools(tmp_path))
    assert docs[0] == {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "argocd"}}
    (cm,) = [d for d in docs if d["metadata"]["name"] == "argocd-cm"]
    assert cm["metadata"]["namespace"] == "argocd"
    assert "resource.customizations.ignoreResourceUpdates.all" in cm["data"]
    assert "resource.customizations.health.deployplane.io_AgentDeployment" in cm["data"]
    project = docs[-1]
    assert (project["kind"], project["metadata"]) == (
        "AppProject",
        {"name": "default", "namespace": "argocd"},
    )
    # What Argo CD's API server creates when it starts (server.go initializeDefaultProject).
    assert project["spec"]["destinations"] == [{"server": "*", "namespace": "*"}]


def test_flux_objects_are_its_namespace_and_both_controllers_crds(tmp_path: Path) -> None:
    docs = flux.objects(fake_tools(tmp_path))
    assert docs[0]["metadata"]["name"] == "flux-system"
    assert len(docs) == 1 + len(flux.CONTROLLERS)


def test_every_server_listens_on_loopback_only(tmp_path: Path) -> None:
    tools = fake_tools(tmp_path)
    repo = argocd.repo_server_argv(tools, 1, 2, "127.0.0.1:3")
    assert {"--address=127.0.0.1", "--metrics-address=127.0.0.1"} <= set(repo)
    redis = argocd.redis_argv(tools.redis_server, 3, tmp_path / "redis")
    assert redis[redis.index("--bind") + 1] == "127.0.0.1"
    source = flux.source_controller_argv(tools, tmp_path / "s", 4, 5, 6)
    assert {
        "--storage-addr=127.0.0.1:4",
        "--metrics-addr=127.0.0.1:5",
        "--health-addr=127.0.0.1:6",
    } <= set(source)
    kustomize = flux.kustomize_controller_argv(tools, 7, 8)
    assert {"--metrics-addr=127.0.0.1:7", "--health-addr=127.0.0.1:8"} <= set(kustomize)
    # The application-controller's metrics address is fixed at build time (build.sh
    # patches upstream's 0.0.0.0 to 127.0.0.1); it takes only the port.
    controller = argocd.controller_argv(tools, tmp_path / "k", "127.0.0.1:1", 9, "127.0.0.1:3")
    assert "--metrics-port=9" in controller


def test_down_removes_what_gitops_wrote() -> None:
    assert {launch.INFO_FILE, launch.GIT_DIR, launch.WORK_DIR} <= set(statefile.OWNED_ENTRIES)


def test_an_incomplete_tools_directory_is_refused_with_the_way_to_build_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(ENV_GITOPS_TOOLS, str(tmp_path))
    with pytest.raises(DevClusterError, match="make gitops-tools"):
        find_gitops_tools()


# ---------------------------------------------------------------- the git server

needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


@pytest.fixture
def git_server(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    root = tmp_path / "git"
    root.mkdir()
    git = shutil.which("git")
    assert git is not None
    server = gitserver.GitServer(root, 0, git)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", root
    server.shutdown()
    server.server_close()


def _git(*args: str, cwd: Path | None = None) -> str:
    done = subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t.invalid", *args],
        cwd=cwd, capture_output=True, text=True, check=True, timeout=60,
    )  # fmt: skip
    return done.stdout.strip()


@needs_git
def test_a_bare_repository_created_under_the_root_takes_pushes_and_clones_at_once(
    git_server: tuple[str, Path], tmp_path: Path
) -> None:
    url, root = git_server
    # Created after the server started: served at once, nothing to register.
    _git("init", "--quiet", "--bare", "--initial-branch=main", str(root / "agents.git"))
    work = tmp_path / "work"
    _git("init", "--quiet", "--initial-branch=main", str(work))
    (work / "a.yaml").write_text("kind: ConfigMap\n")
    # Over git's 1 MiB post buffer: the push arrives chunked.
    (work / "big.bin").write_bytes(bytes(range(256)) * 8192)
    _git("add", "--all", cwd=work)
    _git("commit", "--quiet", "-m", "one", cwd=work)
    _git("push", "--quiet", f"{url}/agents.git", "main", cwd=work)
    sha = _git("rev-parse", "HEAD", cwd=work)
    assert _git("ls-remote", f"{url}/agents.git", "refs/heads/main").split()[0] == sha
    clone = tmp_path / "clone"
    _git("clone", "--quiet", f"{url}/agents.git", str(clone))
    assert (clone / "big.bin").read_bytes() == (work / "big.bin").read_bytes()


@needs_git
def test_a_missing_repository_is_a_not_found(git_server: tuple[str, Path]) -> None:
    url, _ = git_server
    done = subprocess.run(
        ["git", "ls-remote", f"{url}/nothing.git"], capture_output=True, text=True, check=False
    )
    assert done.returncode != 0
    assert "not found" in done.stderr.lower()


@pytest.mark.skipif(shutil.which("redis-server") is None, reason="redis-server is not installed")
def test_redis_which_rewrites_its_title_is_still_found_and_stopped_by_its_pid(
    tmp_path: Path,
) -> None:
    """redis-server overwrites its arguments with "<path> <addr>:<port>": a state file's
    pid must still be recognised as the recorded server, or `down` would leave it running."""
    redis = Path(shutil.which("redis-server") or "")
    port = launch.Ports.pick().redis
    argv = argocd.redis_argv(redis, port, tmp_path / "redis")
    proc = processes.spawn("argocd-redis", argv, tmp_path / "redis.log", detached=True)
    try:
        deadline = time.monotonic() + 10
        while not launch._redis_pong(port):
            assert time.monotonic() < deadline, (tmp_path / "redis.log").read_text()
            time.sleep(0.05)
        cmdline = Path(f"/proc/{proc.pid}/cmdline").read_bytes()
        assert cmdline.split(b"\0")[0] != str(redis).encode()  # the title was rewritten
        assert processes.pid_runs(proc.pid, str(redis))
        recorded = processes.ServerProcess("argocd-redis", proc.pid, str(redis), proc.log)
        processes.stop([recorded])
        assert not processes.pid_runs(proc.pid, str(redis))
    finally:
        processes.stop([proc])


def test_the_git_server_takes_the_port_it_is_given_and_says_when_it_is_taken() -> None:
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        free = holder.getsockname()[1]
    ports = launch.Ports.pick(git=free)
    assert ports.git == free
    assert len({getattr(ports, f.name) for f in dataclasses.fields(ports)}) == 10
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        taken = holder.getsockname()[1]
        with pytest.raises(DevClusterError, match=f"port {taken} of 127.0.0.1 is taken"):
            launch.Ports.pick(git=taken)
