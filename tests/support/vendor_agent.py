"""The listener agent as the chart runs it, for the suites of the vendor's data plane
(test_dataplane_vendor, test_dataplane_changes): `VendorAgent` starts it with exactly the
chart's RBAC and settings for the values a test gives, `vendor_crds` makes the cluster
serve the Gateway API and KEDA CRDs it renders; and what those suites read back (the
agent's writes, custom objects) and deploy (one AgentDeployment Ready).

A suite takes the fixtures by importing them by name, with the data plane's own
(tests/support/dataplane_fixtures.py) they depend on."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client
from kubernetes.client.exceptions import ApiException
from tests.support import chart
from tests.support.dataplane_fixtures import AGD, AGENT_SA, deployment_body
from tests.support.e2ecluster import E2ECluster
from tests.support.listener_agent import LISTENER, AgentProcess, agent_env, running_agent
from tests.support.nodes import Workloads
from tests.support.operator_harness import Emulator, Resources, ready_for_generation

from deployplane.devcluster import DevCluster, ToolsNotFound, find_tools
from deployplane.devcluster.manifests import Applier

MANAGER = "deployplane-listener-agent"
VENDOR_KINDS = {
    ("gateway.networking.k8s.io", "v1"): "HTTPRoute",
    ("keda.sh", "v1alpha1"): "ScaledObject",
}


def _served(api: client.ApiClient, group: str, version: str, kind: str) -> bool:
    try:
        resources = client.CustomObjectsApi(api).get_api_resources(group, version)
    except ApiException:
        return False
    return any(r.kind == kind for r in (resources.resources if resources else []))


@pytest.fixture(scope="module")
def vendor_crds(dev_cluster: E2ECluster, k8s_api: client.ApiClient) -> None:
    """The Gateway API and KEDA CRDs: already served, or installed from `make tools`."""
    missing = [(g, v, k) for (g, v), k in VENDOR_KINDS.items() if not _served(k8s_api, g, v, k)]
    if not missing:
        return
    if not isinstance(dev_cluster, DevCluster):
        pytest.skip("this cluster serves no Gateway API / KEDA CRDs (HTTPRoute, ScaledObject)")
    try:
        directory = find_tools().bin_dir / "crds"
    except ToolsNotFound as exc:
        pytest.skip(str(exc))
    files = sorted(directory.glob("*.yaml"))
    if not files:
        pytest.skip(f"no Gateway API / KEDA CRDs in {directory}: run `make tools`")
    # The Applier waits for each CRD to be Established and in discovery.
    Applier(k8s_api).apply([yaml.safe_load(f.read_text()) for f in files])
    assert all(_served(k8s_api, *gvk) for gvk in missing)


def agent_values(namespace: str, agents: str, settings: dict[str, Any]) -> dict[str, Any]:
    return {
        "listenerAgent": {
            "enabled": True,
            "listenerName": LISTENER,
            "listenerNamespace": namespace,
            "namespaces": [agents],
            **settings,
        }
    }


def chart_agent_env(values: dict[str, Any]) -> dict[str, str]:
    """The DEPLOYPLANE_* settings the chart gives the agent for these values."""
    for doc in chart.render(values, namespace="x"):
        if doc["kind"] == "Deployment" and doc["metadata"]["name"] == AGENT_SA:
            container = doc["spec"]["template"]["spec"]["containers"][0]
            return {
                e["name"]: e["value"]
                for e in container["env"]
                if "value" in e and e["name"] not in ("HOME", "DEPLOYPLANE_POLL_INTERVAL")
            }
    raise AssertionError("the chart rendered no listener agent")


class VendorAgent:
    """The agent with exactly the chart's RBAC and settings for `settings`."""

    def __init__(
        self,
        namespace: str,
        agents: str,
        dev_cluster: E2ECluster,
        k8s_api: client.ApiClient,
        emulator: Emulator,
        tmp_path: Path,
        image: str,
    ) -> None:
        self.namespace, self.agents = namespace, agents
        self.dev_cluster, self.api, self.emulator = dev_cluster, k8s_api, emulator
        self.tmp_path = tmp_path
        self.image = image  # what the nodes can run (tests/support/nodes.py)
        self.process: AgentProcess | None = None
        self.running = contextlib.ExitStack()

    def start(self, settings: dict[str, Any], *, poll_interval: float = 0.5) -> AgentProcess:
        try:
            chart.helm_binary()
        except chart.HelmNotFound as exc:
            pytest.skip(str(exc))
        values = agent_values(self.namespace, self.agents, settings)
        docs = [
            d
            for d in chart.render(values, namespace=self.namespace)
            if d["kind"] in chart.RBAC_KINDS and d["metadata"]["name"].startswith(AGENT_SA)
        ]
        Applier(self.api).apply(docs)
        path = self.tmp_path / f"{self.namespace}.kubeconfig"
        kubeconfig = self.dev_cluster.service_account_kubeconfig(self.namespace, AGENT_SA, path)
        env = {
            **chart_agent_env(values),
            **agent_env(self.emulator.url, kubeconfig, poll_interval),
        }
        log = self.tmp_path / "agent.log"
        self.process = self.running.enter_context(running_agent(self.namespace, env, log))
        return self.process

    def stop(self) -> None:
        """The agent stopped (and its log checked), if it was started."""
        self.running.close()
        self.process = None


@pytest.fixture
def vendor_agent(
    namespace: str,
    agents_namespace: str,
    dev_cluster: E2ECluster,
    k8s_api: client.ApiClient,
    emulator: Emulator,
    tmp_path: Path,
    vendor_crds: None,
    workload_images: Workloads,
) -> Iterator[VendorAgent]:
    image = workload_images.agent_image(1)
    agent = VendorAgent(
        namespace, agents_namespace, dev_cluster, k8s_api, emulator, tmp_path, image
    )
    yield agent
    agent.stop()


def scaled_body(name: str, agents: str, image: str) -> dict[str, Any]:
    """`deployment_body` with both autoscalers' maxima set."""
    body = deployment_body(name, image, agents)
    body["spec"]["sourceConfig"]["resourceSpec"] = {
        "minScale": 1,
        "maxScale": 2,
        "queueMinScale": 1,
        "queueMaxScale": 4,
    }
    return body


def custom(api: client.ApiClient, group: str, version: str, ns: str, plural: str) -> list[Any]:
    items: list[Any] = client.CustomObjectsApi(api).list_namespaced_custom_object(
        group, version, ns, plural
    )["items"]
    return items


def deploy(resources: Resources, name: str, agents: str, image: str) -> dict[str, Any]:
    resources.create(AGD, scaled_body(name, agents, image))
    obj = resources.wait(AGD, name, ready_for_generation, within=180, what="Ready")
    assert obj is not None
    assert obj["status"]["revision"]["status"] == "DEPLOYED"
    return obj


def agent_writes(api: client.ApiClient, namespace: str) -> dict[tuple[str, str], str]:
    """(kind, name) -> when the agent's field manager last changed that object."""
    found: dict[tuple[str, str], str] = {}
    apps, core = client.AppsV1Api(api), client.CoreV1Api(api)
    networking = client.NetworkingV1Api(api)
    listed = [
        *apps.list_namespaced_deployment(namespace).items,
        *apps.list_namespaced_stateful_set(namespace).items,
        *core.list_namespaced_service(namespace).items,
        *core.list_namespaced_secret(namespace).items,
        *core.list_namespaced_config_map(namespace).items,
        *networking.list_namespaced_network_policy(namespace).items,
        *networking.list_namespaced_ingress(namespace).items,
        *client.AutoscalingV2Api(api).list_namespaced_horizontal_pod_autoscaler(namespace).items,
    ]
    for obj in listed:
        for entry in obj.metadata.managed_fields or []:
            if entry.manager == MANAGER and entry.operation == "Apply":
                found[(type(obj).__name__, obj.metadata.name)] = str(entry.time)
    return found
