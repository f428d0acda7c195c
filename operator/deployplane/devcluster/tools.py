"""Where the control-plane binaries are.

They are built from Go modules by `tools/k8s/build.sh` (there are no container images
or prebuilt downloads on these machines), so the lookup follows that script: an explicit
`DEPLOYPLANE_TOOLS_BIN` wins (the Makefile sets it), then the script's own answer when
running from the repository checkout, then the newest build in the cache, and only
then PATH. PATH comes last on purpose: a stray `kubectl` from some SDK is not the
version the apiserver was built at.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

ENV_TOOLS_BIN = "DEPLOYPLANE_TOOLS_BIN"
REQUIRED = ("etcd", "kube-apiserver")
HINT = "build them with `make tools` (tools/k8s/build.sh, cached under ~/.cache/deployplane/k8s)"


class ToolsNotFound(RuntimeError):
    """The etcd / kube-apiserver binaries are not where they were looked for."""


@dataclass(frozen=True)
class Tools:
    """Absolute paths of the binaries the dev cluster runs."""

    bin_dir: Path
    etcd: Path
    kube_apiserver: Path
    kube_controller_manager: Path | None
    kubectl: Path | None
    helm: Path | None
    # Only a cluster started with `workloads=True` needs these two.
    kube_scheduler: Path | None = None
    kwok: Path | None = None


def _repo_build_script() -> Path | None:
    # operator/deployplane/devcluster/tools.py -> repository root is parents[3].
    script = Path(__file__).resolve().parents[3] / "tools" / "k8s" / "build.sh"
    return script if script.is_file() else None


def _script_bin_dir(script: Path) -> Path | None:
    try:
        out = subprocess.run(
            ["bash", str(script), "path"], capture_output=True, text=True, timeout=10, check=True
        )
    except (OSError, subprocess.SubprocessError):
        return None
    line = out.stdout.strip()
    return Path(line) if line else None


def _cached_bin_dirs() -> list[Path]:
    cache = Path(os.environ.get("DEPLOYPLANE_CACHE", Path.home() / ".cache" / "deployplane"))
    dirs = [d for d in (cache / "k8s").glob("v*/bin") if _complete(d)]
    return sorted(dirs, key=lambda d: d.stat().st_mtime, reverse=True)


def _complete(bin_dir: Path) -> bool:
    return all(os.access(bin_dir / name, os.X_OK) for name in REQUIRED)


def _optional(bin_dir: Path, name: str) -> Path | None:
    path = bin_dir / name
    return path if os.access(path, os.X_OK) else None


def _tools_in(bin_dir: Path) -> Tools:
    return Tools(
        bin_dir=bin_dir,
        etcd=bin_dir / "etcd",
        kube_apiserver=bin_dir / "kube-apiserver",
        kube_controller_manager=_optional(bin_dir, "kube-controller-manager"),
        kubectl=_optional(bin_dir, "kubectl"),
        helm=_optional(bin_dir, "helm"),
        kube_scheduler=_optional(bin_dir, "kube-scheduler"),
        kwok=_optional(bin_dir, "kwok"),
    )


def find_tools() -> Tools:
    """Locate the binaries or raise `ToolsNotFound` saying where it looked."""
    looked: list[str] = []
    explicit = os.environ.get(ENV_TOOLS_BIN)
    if explicit:
        bin_dir = Path(explicit).expanduser().resolve()
        if _complete(bin_dir):
            return _tools_in(bin_dir)
        # An explicit setting that is wrong must not silently fall back to something else.
        raise ToolsNotFound(f"{ENV_TOOLS_BIN}={explicit} lacks {' and '.join(REQUIRED)}; {HINT}")
    script = _repo_build_script()
    if script is not None:
        bin_dir_or_none = _script_bin_dir(script)
        if bin_dir_or_none is not None:
            if _complete(bin_dir_or_none):
                return _tools_in(bin_dir_or_none)
            looked.append(str(bin_dir_or_none))
    cached = _cached_bin_dirs()
    if cached:
        return _tools_in(cached[0])
    looked.append("~/.cache/deployplane/k8s/*/bin")
    on_path = [shutil.which(name) for name in REQUIRED]
    if all(on_path):
        dirs = {Path(p).resolve().parent for p in on_path if p}
        if len(dirs) == 1:
            return _tools_in(dirs.pop())
    looked.append("PATH")
    raise ToolsNotFound(f"etcd and kube-apiserver not found in {', '.join(looked)}; {HINT}")
