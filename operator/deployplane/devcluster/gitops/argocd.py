"""Argo CD on the dev cluster: its objects, and how its two servers are run.

What runs is what syncs and judges: the application-controller (diff, sync, prune,
self-heal, health) and the repo-server (clones the repository, renders directories and
Helm charts), with redis as their cache, each a host process on 127.0.0.1 from the one
`argocd` binary (it acts as the program named by ARGOCD_BINARY_NAME). Not run: the API
server and UI, the ApplicationSet and notification controllers, Dex, the commit server
(manifest hydration is off); Applications and AppProjects are objects applied with
kubectl. The API server would create the AppProject `default`; `objects()` does.

Out of a cluster, Argo CD reaches `https://kubernetes.default.svc` (its in-cluster
destination) through KUBECONFIG when ARGOCD_FAKE_IN_CLUSTER=true, as its own local
development setup (Procfile) runs it. The data paths it reads from mounted ConfigMaps
in a pod (TLS, SSH known hosts, GnuPG) are directories of its own here.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import yaml

from deployplane.devcluster.gitops.tools import GitOpsTools

NAMESPACE = "argocd"
REPO_ROOT = Path(__file__).resolve().parents[4]
CHART = REPO_ROOT / "charts" / "deployplane"
HEALTH_LUA = CHART / "argocd" / "health.lua"
HEALTH_KEY = "resource.customizations.health.{group}_{kind}"
# Seconds between the controller's comparisons of every Application with git (Argo CD's
# default is 120 with 60 of jitter): a commit is picked up within this, or at once on a
# refresh request (the argocd.argoproj.io/refresh annotation, as a webhook makes one).
APP_RESYNC = 30


def chart_kinds() -> list[tuple[str, str]]:
    """(group, kind) of every custom resource the chart ships a CRD for."""
    kinds = []
    for path in sorted((CHART / "crds").glob("*.yaml")):
        spec = yaml.safe_load(path.read_text())["spec"]
        kinds.append((str(spec["group"]), str(spec["names"]["kind"])))
    return kinds


def health_customizations() -> dict[str, str]:
    """argocd-cm's health check of every deployplane kind: the chart's one script."""
    script = HEALTH_LUA.read_text()
    return {HEALTH_KEY.format(group=g, kind=k): script for g, k in chart_kinds()}


def objects(tools: GitOpsTools) -> list[dict[str, Any]]:
    """What an Argo CD install puts in the cluster for these two servers, in order: the
    namespace, the CRDs, the configuration objects (argocd-cm with the health checks)
    and the AppProject `default`."""
    docs: list[dict[str, Any]] = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}
    ]
    docs += [yaml.safe_load(path.read_text()) for path in tools.argocd_crds]
    for path in tools.argocd_config:
        doc = yaml.safe_load(path.read_text())
        doc["metadata"]["namespace"] = NAMESPACE
        if doc["metadata"]["name"] == "argocd-cm":
            doc["data"] = {**(doc.get("data") or {}), **health_customizations()}
        docs.append(doc)
    docs.append(
        {
            "apiVersion": "argoproj.io/v1alpha1",
            "kind": "AppProject",
            "metadata": {"name": "default", "namespace": NAMESPACE},
            "spec": {
                "sourceRepos": ["*"],
                "destinations": [{"server": "*", "namespace": "*"}],
                "clusterResourceWhitelist": [{"group": "*", "kind": "*"}],
            },
        }
    )
    return docs


def data_dirs(work: Path) -> dict[str, Path]:
    """The directories Argo CD reads from mounted ConfigMaps in a pod, and its scratch."""
    dirs = {
        "ARGOCD_TLS_DATA_PATH": work / "tls",
        "ARGOCD_SSH_DATA_PATH": work / "ssh",
        "ARGOCD_GNUPGHOME": work / "gpg" / "keys",
        "ARGOCD_GPG_DATA_PATH": work / "gpg" / "source",
        # The repo-server's clones (os.TempDir), and git's and helm's home: inside the
        # state directory, so `down` removes them with it.
        "TMPDIR": work / "tmp",
        "HOME": work / "home",
    }
    for path in dirs.values():
        path.mkdir(parents=True, exist_ok=True)
    return dirs


def env(tools: GitOpsTools, kubeconfig: Path, work: Path, k8s_bin: Path) -> dict[str, str]:
    """The environment of both servers: git, helm, kustomize and git-verify-wrapper.sh on
    PATH."""
    path = os.pathsep.join(
        [str(tools.bin_dir), str(k8s_bin), str(tools.git.parent), os.environ.get("PATH", "")]
    )
    return {
        **os.environ,
        **{name: str(p) for name, p in data_dirs(work).items()},
        "PATH": path,
        "KUBECONFIG": str(kubeconfig),
        "ARGOCD_FAKE_IN_CLUSTER": "true",
        "ARGOCD_GPG_ENABLED": "false",
        "GIT_CONFIG_NOSYSTEM": "1",
    }


def repo_server_argv(tools: GitOpsTools, port: int, metrics_port: int, redis: str) -> list[str]:
    return [
        str(tools.argocd),
        "--address=127.0.0.1",
        f"--port={port}",
        "--metrics-address=127.0.0.1",
        f"--metrics-port={metrics_port}",
        f"--redis={redis}",
        "--logformat=text",
    ]


def controller_argv(
    tools: GitOpsTools, kubeconfig: Path, repo_server: str, metrics_port: int, redis: str
) -> list[str]:
    return [
        str(tools.argocd),
        f"--kubeconfig={kubeconfig}",
        f"--namespace={NAMESPACE}",
        f"--redis={redis}",
        f"--repo-server={repo_server}",
        # No commit server runs (hydration off); the flag must still name an address.
        "--commit-server=127.0.0.1:1",
        "--hydrator-enabled=false",
        f"--metrics-port={metrics_port}",
        f"--app-resync={APP_RESYNC}",
        # No API server runs to show each resource's health from redis: kept in the
        # Application's status.resources instead, where kubectl shows it.
        "--persist-resource-health=true",
        "--logformat=text",
    ]


def redis_argv(redis_server: Path, port: int, work: Path) -> list[str]:
    # A cache only: nothing saved, nothing appended; its working directory in the state
    # directory all the same.
    work.mkdir(parents=True, exist_ok=True)
    return [
        str(redis_server),
        "--port",
        str(port),
        "--bind",
        "127.0.0.1",
        "--dir",
        str(work),
        "--save",
        "",
        "--appendonly",
        "no",
    ]
