"""`make e2e KUBECONFIG=... INSTALL=helm` on a cluster the test session did not start.

The existing-cluster path itself is run by `make test` (`make e2e-existing`,
tools/e2e-existing.sh): a dev cluster with kwok nodes started as a separate process,
the suite run against it with `make e2e KUBECONFIG=...`, and the session's own check
(tests/e2e/conftest.py) that nothing of the run is left in that cluster.

With DEPLOYPLANE_E2E_INSTALL=helm (`make e2e KUBECONFIG=... INSTALL=helm`, for kind):
the chart's own operator and emulator, from the image loaded into the cluster, bring an
AgentDeployment to Ready.
"""

from __future__ import annotations

import time

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException
from tests.support.nodes import NO_REAL_NODES, Workloads
from tests.support.operator_harness import Resources, ready_for_generation


def test_helm_release_from_the_loaded_image_brings_an_agentdeployment_to_ready(
    helm_release: dict[str, str], workloads: Workloads, k8s_api: client.ApiClient
) -> None:
    if workloads.simulated:
        pytest.skip(f"{NO_REAL_NODES}: the chart's operator and emulator must really run")
    namespace = helm_release["namespace"]
    apps = client.AppsV1Api(k8s_api)
    deadline = time.monotonic() + 300
    while True:  # the operator and the emulator Deployments Available
        deployments = apps.list_namespaced_deployment(namespace).items
        if deployments and all(
            (d.status.available_replicas or 0) >= (d.spec.replicas or 1) for d in deployments
        ):
            break
        assert time.monotonic() < deadline, [d.status for d in deployments]
        time.sleep(1)
    resources = Resources(k8s_api, namespace)
    resources.create(
        "listeners",
        {
            "apiVersion": "deployplane.io/v1alpha1",
            "kind": "Listener",
            "metadata": {"name": "cluster"},
            "spec": {"computeType": "k8s", "computeId": f"kind-{namespace}"},
        },
    )
    body = {
        "apiVersion": "deployplane.io/v1alpha1",
        "kind": "AgentDeployment",
        "metadata": {"name": "bot"},
        "spec": {
            "source": "external_docker",
            "sourceConfig": {"listenerRef": {"name": "cluster"}},
            "sourceRevisionConfig": {"imageUri": "registry.example.com/bot:1"},
        },
    }
    resources.create("agentdeployments", body)
    try:
        resources.wait("agentdeployments", "bot", ready_for_generation, within=300)
    finally:
        for plural, name in (("agentdeployments", "bot"), ("listeners", "cluster")):
            try:
                resources.delete(plural, name)
            except ApiException as e:
                if e.status != 404:
                    raise
