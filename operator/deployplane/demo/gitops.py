"""`deployplane demo up --gitops` (`make demo GITOPS=1`): the examples through Argo CD.

The same demo as `demo up`, on a dev cluster started with `--gitops`: the example
AgentDeployments are not applied by the demo but pushed to the repository `demo` of the
cluster's git server (`agents/`), and an Argo CD Application (examples/gitops/
argocd-application.yaml, with that repository and the demo's namespace) syncs them;
Argo CD judges them with the chart's health check. The Secret, the connection and the
Listener are applied as in the plain demo. Push to the repository (its URL is printed)
and Argo CD follows. The emulator and the git server listen on fixed ports, the ones
examples/gitops/ names, so that those manifests apply here as they are (docs/gitops.md).
"""

from __future__ import annotations

import socket
import time
from pathlib import Path
from typing import Any

import yaml
from kubernetes import client

from deployplane.devcluster.cluster import DevCluster
from deployplane.devcluster.errors import DevClusterError
from deployplane.devcluster.gitops import read_info, repos
from deployplane.devcluster.manifests import Applier

REPOSITORY = "demo"
APPLICATION = "examples/gitops/argocd-application.yaml"
# Fixed, unlike every other port of the demo: examples/gitops/ names them (its demo
# overlay's connection URL, the repository URL of its Application and GitRepository),
# so that those apply on this demo as they are. Below the kernel's ephemeral range, so
# no port picked at random takes them.
EMULATOR_PORT = 18080
GIT_PORT = 18081


def check_ports() -> None:
    """Both fixed ports free, else a DevClusterError saying what holds them most likely."""
    for port, what in ((EMULATOR_PORT, "the emulator"), (GIT_PORT, "the git server")):
        with socket.socket() as sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                sock.bind(("127.0.0.1", port))
            except OSError as e:
                raise DevClusterError(
                    f"127.0.0.1:{port}, {what}'s port with --gitops, is taken ({e.strerror}): "
                    "is another `make demo GITOPS=1` running? (`make demo-down` in its checkout)"
                ) from e


def application(name: str, repo_url: str, namespace: str) -> dict[str, Any]:
    """The example Application with the demo's own repository (its files at the root)
    and namespace."""
    app: dict[str, Any] = yaml.safe_load(Path(APPLICATION).read_text())
    app["metadata"]["name"] = name
    app["spec"]["source"]["repoURL"] = repo_url
    app["spec"]["source"]["path"] = "agents"
    app["spec"]["destination"]["namespace"] = namespace
    return app


def sync_examples(
    cluster: DevCluster, api: client.ApiClient, namespace: str, timeout: float = 180.0
) -> str:
    """Push examples/agentdeployment-*.yaml, apply the Application and wait until Argo CD
    has created every one of them (the demo's table then follows them to Ready); the
    repository's URL."""
    info = read_info(cluster.state_dir)
    if info is None:
        raise DevClusterError("the cluster runs no GitOps tools (no gitops.json)")
    files = {
        f"agents/{path.name}": path.read_text()
        for path in sorted(Path("examples").glob("agentdeployment-*.yaml"))
    }
    url = repos.push(info, REPOSITORY, files, "the demo's AgentDeployments")
    Applier(api).apply(application(REPOSITORY, url, namespace))
    names = {yaml.safe_load(text)["metadata"]["name"] for text in files.values()}
    custom = client.CustomObjectsApi(api)
    deadline = time.monotonic() + timeout
    while True:
        listed = custom.list_namespaced_custom_object(
            "deployplane.io", "v1alpha1", namespace, "agentdeployments"
        )
        if names <= {item["metadata"]["name"] for item in listed["items"]}:
            return url
        if time.monotonic() > deadline:
            raise DevClusterError(
                f"Argo CD did not sync {url} within {timeout:.0f}s: "
                f"kubectl -n {info.argocd_namespace} get application {REPOSITORY} -o yaml"
            )
        time.sleep(0.5)


def next_steps(cluster: DevCluster, url: str) -> list[str]:
    """What to try next, with the Argo CD namespace the cluster recorded."""
    info = read_info(cluster.state_dir)
    namespace = info.argocd_namespace if info else "argocd"
    return [
        f"git clone {url}   # edit agents/, commit, git push: Argo CD syncs it",
        f"kubectl -n {namespace} get application {REPOSITORY}   # Argo CD's verdict",
        "examples/gitops/ on this demo, with Argo CD and with Flux: docs/gitops.md",
    ]
