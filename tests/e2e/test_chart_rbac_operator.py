"""The chart's default (cluster-wide) RBAC is enough: the operator, watching all
namespaces with nothing but the chart ServiceAccount's token, brings an AgentDeployment
(writing its outputs' ConfigMap) and its Listener to Ready and deletes them again — and
logs no "forbidden"."""

from __future__ import annotations

import contextlib
import re
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client
from kubernetes.client.exceptions import ApiException
from tests.support import chart
from tests.support.e2ecluster import E2ECluster
from tests.support.operator_harness import (
    REPO,
    Emulator,
    Resources,
    kopf_operator,
    operator_env,
    ready_for_generation,
)

from deployplane.devcluster.manifests import Applier

AGD, LST = "agentdeployments", "listeners"


def _sa_kubeconfig(
    dev_cluster: E2ECluster, k8s_api: client.ApiClient, release_ns: str, tmp: Path
) -> Path:
    docs = chart.rbac_documents({}, namespace=release_ns)
    kinds = sorted(d["kind"] for d in docs)
    assert "ClusterRole" in kinds, kinds  # the default install is cluster-wide
    applier = Applier(k8s_api)
    applier.apply(
        [
            yaml.safe_load(p.read_text())
            for p in sorted((REPO / "crds").glob("*.deployplane.io.yaml"))
        ]
    )
    applier.apply(docs, namespace=release_ns)
    sa = chart.find(docs, "ServiceAccount")["metadata"]["name"]
    path = dev_cluster.service_account_kubeconfig(release_ns, sa, tmp / "sa.kubeconfig")
    # Wait until the authorizer sees the new binding (RBAC is cached in the apiserver).
    token = yaml.safe_load(path.read_text())["users"][0]["user"]["token"]
    with contextlib.closing(dev_cluster.api_client(token=token)) as api:
        deadline = time.monotonic() + 15
        while True:
            try:
                client.CustomObjectsApi(api).list_cluster_custom_object(
                    "deployplane.io", "v1alpha1", AGD
                )
                break
            except ApiException as exc:
                if exc.status != 403 or time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
    return path


def test_operator_with_only_the_chart_service_account_reconciles_cluster_wide(
    dev_cluster: E2ECluster,
    k8s_api: client.ApiClient,
    namespace: str,
    emulator: Emulator,
    tmp_path: Path,
) -> None:
    try:
        kubeconfig = _sa_kubeconfig(dev_cluster, k8s_api, namespace, tmp_path)
    except chart.HelmNotFound as exc:
        pytest.fail(str(exc), pytrace=False)
    res = Resources(k8s_api, namespace)
    res.put_secret("llm-keys", {"openai": "sk-rbac-test-value"})
    listener: dict[str, Any] = {
        "apiVersion": "deployplane.io/v1alpha1",
        "kind": "Listener",
        "metadata": {"name": "edge"},
        "spec": {"computeType": "k8s", "computeId": f"edge-{namespace}"},
    }
    deployment: dict[str, Any] = {
        "apiVersion": "deployplane.io/v1alpha1",
        "kind": "AgentDeployment",
        "metadata": {"name": "rbac"},
        "spec": {
            "source": "external_docker",
            "sourceConfig": {"listenerRef": {"name": "edge"}},
            "sourceRevisionConfig": {"imageUri": "registry.example.com/agent:1"},
            "secretsFrom": [{"secretRef": {"name": "llm-keys"}}],
            # The outputs' ConfigMap: read, created (with blockOwnerDeletion) and patched.
            "writeOutputsTo": {"configMapName": "rbac-outputs"},
        },
    }
    with kopf_operator(None, operator_env(emulator, kubeconfig)) as runner:
        res.create(LST, listener)
        res.create(AGD, deployment)
        res.wait(LST, "edge", ready_for_generation, what="Listener Ready")
        ready = res.wait(AGD, "rbac", ready_for_generation, what="AgentDeployment Ready")
        assert ready is not None
        outputs = client.CoreV1Api(k8s_api).read_namespaced_config_map("rbac-outputs", namespace)
        assert outputs.data["url"] == ready["status"]["url"]
        (owner,) = outputs.metadata.owner_references
        assert (owner.uid, owner.controller, owner.block_owner_deletion) == (
            ready["metadata"]["uid"],
            True,
            True,
        )
        res.delete(AGD, "rbac")
        res.delete(LST, "edge")
        res.wait(AGD, "rbac", lambda o: o is None, what="AgentDeployment finalized")
        res.wait(LST, "edge", lambda o: o is None, what="Listener finalized")
    # Any RBAC denial reads `... is forbidden: User "system:serviceaccount:..." cannot ...`.
    # (Cluster-wide, the operator also sees other tests' namespaces being torn down, where
    # the apiserver refuses new Events as "forbidden ... being terminated": not RBAC.)
    denials = re.findall(r'forbidden: User \\?"[^"\\]+\\?" cannot [^,\']+', runner.output)
    assert denials == [], denials
    assert emulator.deployments_named("rbac") == []
