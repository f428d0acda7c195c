"""Flux on the dev cluster: source-controller and kustomize-controller, host processes.

The two controllers a GitRepository + Kustomization need: the source-controller clones
the repository and serves each revision as an artifact over HTTP (127.0.0.1 here), the
kustomize-controller builds it, applies it server-side, prunes, and waits with kstatus.
They have no --kubeconfig flag: KUBECONFIG and RUNTIME_NAMESPACE (where a pod would
run) in their environment say which cluster and namespace. Leader election is off (one
replica each) and they watch every namespace, as `flux install` does by default.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import yaml

from deployplane.devcluster.gitops.tools import GitOpsTools

NAMESPACE = "flux-system"
CONTROLLERS = ("source-controller", "kustomize-controller")


def objects(tools: GitOpsTools) -> list[dict[str, Any]]:
    """The namespace and both controllers' CRDs."""
    docs: list[dict[str, Any]] = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}
    ]
    for controller in CONTROLLERS:
        docs += [yaml.safe_load(path.read_text()) for path in tools.flux_crds(controller)]
    return docs


def env(kubeconfig: Path, home: Path) -> dict[str, str]:
    home.mkdir(parents=True, exist_ok=True)
    return {
        **os.environ,
        "KUBECONFIG": str(kubeconfig),
        "RUNTIME_NAMESPACE": NAMESPACE,
        # Their scratch (clones, builds) inside the state directory: `down` removes it.
        "TMPDIR": str(home),
        "HOME": str(home),
    }


def source_controller_argv(
    tools: GitOpsTools, storage: Path, storage_port: int, metrics_port: int, health_port: int
) -> list[str]:
    storage.mkdir(parents=True, exist_ok=True)
    return [
        str(tools.flux("source-controller")),
        f"--storage-path={storage}",
        f"--storage-addr=127.0.0.1:{storage_port}",
        f"--storage-adv-addr=127.0.0.1:{storage_port}",
        *_common(metrics_port, health_port),
    ]


def kustomize_controller_argv(tools: GitOpsTools, metrics_port: int, health_port: int) -> list[str]:
    return [str(tools.flux("kustomize-controller")), *_common(metrics_port, health_port)]


def _common(metrics_port: int, health_port: int) -> list[str]:
    return [
        f"--metrics-addr=127.0.0.1:{metrics_port}",
        f"--health-addr=127.0.0.1:{health_port}",
        "--enable-leader-election=false",
        "--watch-all-namespaces=true",
        "--log-encoding=console",
    ]
