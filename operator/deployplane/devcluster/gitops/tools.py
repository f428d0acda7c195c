"""Where the GitOps controllers and their manifests are.

`tools/gitops/build.sh` (`make gitops-tools`) builds Argo CD and Flux's source- and
kustomize-controller from their Go modules into one directory, `bin/` beside
`manifests/` (their CRDs and Argo CD's configuration objects, from the same releases).
Looked up as the Kubernetes tools are (tools.py): `DEPLOYPLANE_GITOPS_TOOLS` wins, then
the build script's own answer from the repository checkout, then the newest complete
build in the cache. redis-server and git come from the system (Debian packages).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from deployplane.devcluster.errors import DevClusterError

ENV_GITOPS_TOOLS = "DEPLOYPLANE_GITOPS_TOOLS"
# kustomize: Argo CD's repo-server runs it for a kustomization (its image bundles it).
BINARIES = (
    "argocd",
    "git-verify-wrapper.sh",
    "kustomize",
    "source-controller",
    "kustomize-controller",
)
HINT = (
    "build them with `make gitops-tools` (tools/gitops/build.sh; about 25 minutes the first time)"
)


@dataclass(frozen=True)
class GitOpsTools:
    """The GitOps binaries and manifests, and the system programs they need."""

    root: Path
    redis_server: Path
    git: Path

    @property
    def bin_dir(self) -> Path:
        return self.root / "bin"

    @property
    def argocd(self) -> Path:
        return self.bin_dir / "argocd"

    def flux(self, controller: str) -> Path:
        return self.bin_dir / controller

    @property
    def argocd_crds(self) -> list[Path]:
        return sorted((self.root / "manifests" / "argocd" / "crds").glob("*.yaml"))

    @property
    def argocd_config(self) -> list[Path]:
        return sorted((self.root / "manifests" / "argocd" / "config").glob("*.yaml"))

    def flux_crds(self, controller: str) -> list[Path]:
        return sorted((self.root / "manifests" / controller).glob("*.yaml"))


def _complete(root: Path) -> bool:
    return all(os.access(root / "bin" / name, os.X_OK) for name in BINARIES)


def _script_root() -> Path | None:
    # operator/deployplane/devcluster/gitops/tools.py -> repository root is parents[4].
    script = Path(__file__).resolve().parents[4] / "tools" / "gitops" / "build.sh"
    if not script.is_file():
        return None
    try:
        out = subprocess.run(
            ["bash", str(script), "path"], capture_output=True, text=True, timeout=10, check=True
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return Path(out.stdout.strip()) if out.stdout.strip() else None


def _cached_roots() -> list[Path]:
    cache = Path(os.environ.get("DEPLOYPLANE_CACHE", Path.home() / ".cache" / "deployplane"))
    roots = [d for d in (cache / "gitops").glob("argocd*") if _complete(d)]
    return sorted(roots, key=lambda d: d.stat().st_mtime, reverse=True)


def _find_root() -> Path:
    explicit = os.environ.get(ENV_GITOPS_TOOLS)
    if explicit:
        root = Path(explicit).expanduser().resolve()
        if _complete(root):
            return root
        raise DevClusterError(f"{ENV_GITOPS_TOOLS}={explicit} lacks {', '.join(BINARIES)}; {HINT}")
    looked = []
    scripted = _script_root()
    if scripted is not None:
        if _complete(scripted):
            return scripted
        looked.append(str(scripted))
    cached = _cached_roots()
    if cached:
        return cached[0]
    looked.append("~/.cache/deployplane/gitops/*")
    raise DevClusterError(f"Argo CD and Flux not found in {', '.join(looked)}; {HINT}")


def find_gitops_root() -> Path:
    """The directory of the built binaries and manifests alone (what `argocd admin`
    needs offline), or raise `DevClusterError` saying where it looked."""
    return _find_root()


def find_gitops_tools() -> GitOpsTools:
    """Locate the GitOps tools, or raise `DevClusterError` saying where it looked."""
    root = _find_root()
    redis, git = shutil.which("redis-server"), shutil.which("git")
    if redis is None or git is None:
        missing = [name for name, path in (("redis-server", redis), ("git", git)) if path is None]
        raise DevClusterError(f"{' and '.join(missing)} not installed; {HINT}")
    return GitOpsTools(root=root, redis_server=Path(redis), git=Path(git))
