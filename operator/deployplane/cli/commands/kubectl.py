"""Where kubectl is, for the commands that run it (`deployments port-forward`, and
`plan`'s `kubectl kustomize`): `$DEPLOYPLANE_TOOLS_BIN/kubectl` (the version the dev
cluster was built at), else PATH, else the dev cluster's tool cache."""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping
from pathlib import Path

__all__ = ["KubectlNotFound", "find_kubectl"]


class KubectlNotFound(RuntimeError):
    """No kubectl where it was looked for: one line saying where to put it."""


def find_kubectl(env: Mapping[str, str]) -> str:
    tools_bin = env.get("DEPLOYPLANE_TOOLS_BIN")
    if tools_bin:
        path = Path(tools_bin).expanduser() / "kubectl"
        if os.access(path, os.X_OK):
            return str(path)
        raise KubectlNotFound(f"DEPLOYPLANE_TOOLS_BIN={tools_bin} has no kubectl")
    on_path = shutil.which("kubectl", path=env.get("PATH"))
    if on_path:
        return on_path
    from deployplane.devcluster.tools import ToolsNotFound, find_tools

    try:
        cached = find_tools().kubectl
    except ToolsNotFound:
        cached = None
    if cached is None:
        raise KubectlNotFound("kubectl not found: put it on PATH or set DEPLOYPLANE_TOOLS_BIN")
    return str(cached)
