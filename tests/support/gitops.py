"""The GitOps tier's session: Argo CD and Flux, built here, on a dev cluster of their own.

`make e2e-gitops` sets DEPLOYPLANE_E2E_GITOPS=1; then the e2e session's `dev_cluster`
(tests/e2e/conftest.py) is the cluster `deployplane dev cluster up --gitops --workloads`
starts, exactly as a user starts it (the CLI, detached, its `gitops.json`), with kwok
nodes for the chart's operator pods. Its last test stops it with `down`
(tests/e2e/gitops/test_gitops_argocd.py, RUN_LAST). Also here: a working copy that pushes to
the cluster's git server, and what the tests read of Applications and Kustomizations.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import fcntl
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kubernetes import client
from kubernetes.client.exceptions import ApiException

from deployplane.devcluster import DevCluster
from deployplane.devcluster.errors import DevClusterError
from deployplane.devcluster.gitops import GitOpsInfo, find_gitops_tools, read_info

ENV = "DEPLOYPLANE_E2E_GITOPS"
REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples" / "gitops"
ARGO = ("argoproj.io", "v1alpha1", "applications")
FLUX_SOURCE = ("source.toolkit.fluxcd.io", "v1", "gitrepositories")
FLUX_KUSTOMIZATION = ("kustomize.toolkit.fluxcd.io", "v1", "kustomizations")


def enabled() -> bool:
    return os.environ.get(ENV) == "1"


def skip_reason() -> str | None:
    if not enabled():
        return f"the GitOps tier runs with {ENV}=1 (make e2e-gitops)"
    try:
        find_gitops_tools()
    except DevClusterError as e:
        return str(e)
    return None


@contextlib.contextmanager
def gitops_demo_ports() -> Iterator[None]:
    """The machine-wide lock of the ports `demo up --gitops` fixes (its emulator's and its
    git server's: examples/gitops/ names them), held while such a demo runs: another
    test's waits rather than finding them taken."""
    cache = Path(os.environ.get("DEPLOYPLANE_CACHE", Path.home() / ".cache" / "deployplane"))
    cache.mkdir(parents=True, exist_ok=True)
    with (cache / "gitops-demo.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


@dataclass
class Session:
    """The tier's cluster (attached: it runs detached, as `up` left it) and gitops.json."""

    cluster: DevCluster
    info: GitOpsInfo
    state_dir: Path


def deployplane(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """`deployplane ...` in a child process; its output in the AssertionError if it fails."""
    done = subprocess.run(
        [sys.executable, "-m", "deployplane.cli", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    if done.returncode != 0:
        raise AssertionError(f"deployplane {' '.join(args)}: {done.stdout}\n{done.stderr}")
    return done


def start(state: Path) -> Session:
    """`deployplane dev cluster up --gitops --workloads`, then the cluster it recorded."""
    state_dir = (state / "cluster").resolve()
    try:
        deployplane(
            "dev", "cluster", "up", "--gitops", "--workloads",
            "--state-dir", str(state_dir), "--timeout", "180",
        )  # fmt: skip
    except BaseException:
        stop_recorded(state_dir)
        raise
    cluster, info = DevCluster.attach(state_dir), read_info(state_dir)
    assert cluster is not None, f"no state.json in {state_dir}"
    assert info is not None, f"no gitops.json in {state_dir}"
    return Session(cluster, info, state_dir)


def stop_recorded(state_dir: Path) -> None:
    """Stop whatever a (partial) `up` recorded in `state_dir`."""
    cluster = DevCluster.attach(state_dir)
    if cluster is not None:
        cluster.stop()


def processes_mentioning(text: str) -> list[str]:
    """Live processes whose command line, environment or working directory mentions
    `text` (a state directory): every server of the cluster does, one way or another."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == os.getpid():
            continue
        try:
            state = (proc / "stat").read_text().rsplit(")", 1)[1].split()[0]
            cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            environ = (proc / "environ").read_bytes().decode(errors="replace")
            cwd = os.readlink(proc / "cwd")
        except (OSError, IndexError):
            continue
        if state != "Z" and (text in cmdline or text in environ or cwd.startswith(text)):
            found.append(f"{proc.name}: {cmdline[:120]}")
    return found


class GitRepo:
    """A working copy whose branch `main` is pushed to `<git_url>/<name>.git`: the bare
    repository is created under the git server's root, which serves it at once."""

    def __init__(self, info: GitOpsInfo, name: str, workdir: Path) -> None:
        self.name = name
        self.url = f"{info.git_url}/{name}.git"
        self.workdir = workdir
        bare = Path(info.git_root) / f"{name}.git"
        self._git("init", "--quiet", "--bare", "--initial-branch=main", str(bare))
        workdir.mkdir(parents=True, exist_ok=True)
        self._git("init", "--quiet", "--initial-branch=main", str(workdir))
        self._git("-C", str(workdir), "remote", "add", "origin", self.url)

    def _git(self, *args: str) -> str:
        done = subprocess.run(
            ["git", "-c", "user.name=e2e", "-c", "user.email=e2e@deployplane.invalid", *args],
            capture_output=True,
            text=True,
            check=False,
            timeout=60,
        )
        if done.returncode != 0:
            raise AssertionError(f"git {' '.join(args)}: {done.stderr}")
        return done.stdout.strip()

    def write(self, relative: str, text: str) -> None:
        path = self.workdir / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)

    def copy_tree(self, source: Path, relative: str) -> None:
        shutil.copytree(source, self.workdir / relative, dirs_exist_ok=True)

    def remove(self, relative: str) -> None:
        (self.workdir / relative).unlink()

    def push(self, message: str) -> str:
        """Commit everything and push it; the new commit's sha."""
        self._git("-C", str(self.workdir), "add", "--all")
        self._git("-C", str(self.workdir), "commit", "--quiet", "--allow-empty", "-m", message)
        self._git("-C", str(self.workdir), "push", "--quiet", "origin", "main")
        return self._git("-C", str(self.workdir), "rev-parse", "HEAD")


class Objects:
    """Read and annotate objects of one custom kind in one namespace."""

    def __init__(self, api: client.ApiClient, kind: tuple[str, str, str], namespace: str) -> None:
        self.custom = client.CustomObjectsApi(api)
        self.group, self.version, self.plural = kind
        self.namespace = namespace

    def get(self, name: str) -> dict[str, Any] | None:
        try:
            obj: dict[str, Any] = self.custom.get_namespaced_custom_object(
                self.group, self.version, self.namespace, self.plural, name
            )
        except ApiException as e:
            if e.status == 404:
                return None
            raise
        return obj

    def annotate(self, name: str, key: str, value: str) -> None:
        self.custom.patch_namespaced_custom_object(
            self.group, self.version, self.namespace, self.plural, name,
            {"metadata": {"annotations": {key: value}}},
            _content_type="application/merge-patch+json",
        )  # fmt: skip

    def delete(self, name: str) -> None:
        try:
            self.custom.delete_namespaced_custom_object(
                self.group, self.version, self.namespace, self.plural, name
            )
        except ApiException as e:
            if e.status != 404:
                raise


def now() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
