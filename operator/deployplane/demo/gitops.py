"""`deployplane demo up --gitops` (`make demo GITOPS=1`): the examples through Argo CD.

The same demo as `demo up`, on a dev cluster started with `--gitops`: the example
AgentDeployments are not applied by the demo but pushed to the repository `demo` of the
cluster's git server (`agents/`), and an Argo CD Application (examples/gitops/
argocd-application.yaml, with that repository and the demo's namespace) syncs them;
Argo CD judges them with the chart's health check. The Secret, the connection and the
Listener are applied as in the plain demo. Push to the repository (its URL is printed)
and Argo CD follows.
"""

from __future__ import annotations

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


def application(name: str, repo_url: str, namespace: str) -> dict[str, Any]:
    """The example Application with the demo's repository and namespace."""
    app: dict[str, Any] = yaml.safe_load(Path(APPLICATION).read_text())
    app["metadata"]["name"] = name
    app["spec"]["source"]["repoURL"] = repo_url
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
    ]
