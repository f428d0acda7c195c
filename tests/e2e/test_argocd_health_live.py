"""The Argo CD health check on live objects: the operator, running with nothing but the
chart's ServiceAccount token (namespaced install), reconciles against the emulator while
every snapshot of the resource is judged by Argo CD's own binary (`make gitops-tools`)
running charts/deployplane/argocd/health.lua (tests/support/argocd.py).

What Argo CD would show must follow the resource: Progressing until the revision of the
current generation is deployed, then Healthy; after a spec edit never Healthy again
until that edit is deployed; Degraded when the new revision fails.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client
from kubernetes.client.exceptions import ApiException
from tests.support import chart
from tests.support.argocd import Health, argocd_health, argocd_health_all, require_argocd
from tests.support.e2e_fixture_types import ApplyManifest
from tests.support.e2ecluster import E2ECluster
from tests.support.operator_harness import (
    API_KEY,
    REPO,
    Emulator,
    Resources,
    is_true,
    kopf_operator,
    operator_env,
    ready_for_generation,
)

from deployplane.devcluster.manifests import Applier

AGD, LST, CPC = "agentdeployments", "listeners", "controlplaneconnections"


@pytest.fixture
def chart_kubeconfig(
    dev_cluster: E2ECluster,
    k8s_api: client.ApiClient,
    apply_manifest: ApplyManifest,
    namespace: str,
    tmp_path: Path,
) -> Path:
    """A kubeconfig holding only the chart ServiceAccount's token (namespaced install)."""
    try:
        docs = chart.rbac_documents({"watchNamespaces": [namespace]}, namespace=namespace)
    except chart.HelmNotFound as e:
        pytest.fail(str(e), pytrace=False)
    Applier(k8s_api).apply(
        [
            yaml.safe_load(p.read_text())
            for p in sorted((REPO / "crds").glob("*.deployplane.io.yaml"))
        ]
    )
    apply_manifest(docs)
    sa = chart.find(docs, "ServiceAccount")["metadata"]["name"]
    path = dev_cluster.service_account_kubeconfig(namespace, sa, tmp_path / "sa.kubeconfig")
    # Wait until RBAC's informer has the new binding.
    api = dev_cluster.api_client(token=_token_of(path))
    with contextlib.closing(api):
        deadline = time.monotonic() + 10
        while True:
            try:
                client.CustomObjectsApi(api).list_namespaced_custom_object(
                    "deployplane.io", "v1alpha1", namespace, AGD
                )
                break
            except ApiException as e:
                if e.status != 403 or time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
    return path


def _token_of(kubeconfig: Path) -> str:
    config = yaml.safe_load(kubeconfig.read_text())
    token: str = config["users"][0]["user"]["token"]
    return token


def _watch_health(
    resources: Resources,
    name: str,
    until: Callable[[dict[str, Any]], bool],
    *,
    within: float = 90.0,
    plural: str = AGD,
) -> list[tuple[dict[str, Any], Health]]:
    """Every distinct snapshot of the resource with its Argo CD health, until `until`
    (Argo CD's binary judges the snapshots side by side once taken: none is missed)."""
    seen: list[dict[str, Any]] = []
    last_version = None
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        obj = resources.get(plural, name)
        assert obj is not None
        if obj["metadata"]["resourceVersion"] != last_version:
            last_version = obj["metadata"]["resourceVersion"]
            seen.append(obj)
            if until(obj):
                return list(zip(seen, argocd_health_all(seen), strict=True))
        time.sleep(0.05)
    raise AssertionError(f"{name}: not reached; health seen: {argocd_health_all(seen)}")


def _default_connection_turns_healthy(resources: Resources, emulator: Emulator) -> None:
    """The namespace's `default` ControlPlaneConnection (which the resources below then
    use): Progressing until checked, then Healthy."""
    resources.put_secret("cp-key", {"apiKey": API_KEY})
    resources.create(
        CPC,
        {
            "apiVersion": "deployplane.io/v1alpha1",
            "kind": "ControlPlaneConnection",
            "metadata": {"name": "default"},
            "spec": {"url": emulator.url, "apiKeySecretRef": {"name": "cp-key", "key": "apiKey"}},
        },
    )
    seen = _watch_health(resources, "default", ready_for_generation, plural=CPC)
    healths = [h.status for _, h in seen]
    assert (healths[0], healths[-1]) == ("Progressing", "Healthy"), seen


def test_argocd_health_follows_a_live_resource(
    chart_kubeconfig: Path,
    emulator: Emulator,
    k8s_api: client.ApiClient,
    namespace: str,
) -> None:
    require_argocd()
    resources = Resources(k8s_api, namespace)
    env = operator_env(emulator, chart_kubeconfig)
    with kopf_operator(namespace, env) as runner:
        _default_connection_turns_healthy(resources, emulator)
        resources.create(
            LST,
            {
                "apiVersion": "deployplane.io/v1alpha1",
                "kind": "Listener",
                "metadata": {"name": "cluster"},
                "spec": {"computeType": "k8s", "computeId": f"argocd-{namespace}"},
            },
        )
        resources.create(
            AGD,
            {
                "apiVersion": "deployplane.io/v1alpha1",
                "kind": "AgentDeployment",
                "metadata": {"name": "bot"},
                "spec": {
                    "source": "external_docker",
                    "sourceConfig": {"listenerRef": {"name": "cluster"}},
                    "sourceRevisionConfig": {"imageUri": "registry.example.com/bot:1"},
                },
            },
        )
        first = _watch_health(resources, "bot", ready_for_generation)
        healths = [h.status for _, h in first]
        assert healths[0] == "Progressing", first[0]
        assert healths[-1] == "Healthy", first[-1]
        assert set(healths[:-1]) == {"Progressing"}, healths
        listener = resources.custom.get_namespaced_custom_object(
            "deployplane.io", "v1alpha1", namespace, LST, "cluster"
        )
        assert argocd_health(listener).status == "Healthy"

        # A new image that the control plane fails to deploy.
        broken = {"imageUri": "registry.example.com/bot:broken"}
        resources.patch(AGD, "bot", {"spec": {"sourceRevisionConfig": broken}})
        second = _watch_health(resources, "bot", is_true("Stalled"))
        healths = [h.status for _, h in second]
        assert "Healthy" not in healths, second
        assert healths[-1] == "Degraded", second[-1]
        assert "DeployFailed" in second[-1][1].message

    assert runner.exit_code == 0, runner.output[-3000:]
    refused = [line for line in runner.output.splitlines() if "forbidden" in line.lower()]
    assert not refused, "the chart's RBAC refused a call:\n" + "\n".join(refused[:20])
