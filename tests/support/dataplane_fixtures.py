"""The data plane's end-to-end rig, shared by the suites that run the listener agent
(test_dataplane, test_dataplane_vendor, test_dataplane_changes, test_recovery,
test_trace_live): the emulator in normal mode, the listener's namespace under the
`restricted` Pod Security standard, the agent's identity with exactly the chart's RBAC,
the operator and the agent as fixtures; the Listener and AgentDeployment bodies; and
`Cluster`, what `kubectl get` shows of the agents' namespace.

A suite takes the fixtures by importing them by name (pytest then sees them in that
module, with the scope declared here: `emulator` is one per module)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException
from tests.support import chart, polling
from tests.support.e2ecluster import E2ECluster
from tests.support.listener_agent import LISTENER, AgentProcess, agent_env, running_agent
from tests.support.operator_harness import Emulator, kopf_operator, operator_env
from tests.support.podsecurity import RESTRICTED

from deployplane.devcluster.manifests import Applier

AGD, LST = "agentdeployments", "listeners"
AGENT_SA = f"{chart.RELEASE}-listener-agent"
COMPONENT = "app.kubernetes.io/component"
SERVER_LABEL = f"{COMPONENT}=agent-server"
T = TypeVar("T")


def wait_until(what: str, probe: Callable[[], T | None], within: float = 120.0) -> T:
    return polling.wait_until(what, probe, within, interval=0.25)


@pytest.fixture(scope="module")
def emulator(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Emulator]:
    """Normal mode, not strict: the data-plane extension is not in the published contract."""
    emu = Emulator(
        tmp_path_factory.mktemp("emulator"), step_seconds=0.2, strict=False, proxied=False
    ).start()
    yield emu
    emu.stop()


@pytest.fixture
def agents_namespace(namespace: str, k8s_api: client.ApiClient) -> Iterator[str]:
    """The listener's k8s namespace, where the agent deploys: Pod Security `restricted`
    enforced, as a platform team labels it."""
    name = f"{namespace[:50]}-agents"
    core = client.CoreV1Api(k8s_api)
    meta = client.V1ObjectMeta(name=name, labels=RESTRICTED)
    core.create_namespace(client.V1Namespace(metadata=meta))
    yield name
    with contextlib.suppress(ApiException):
        core.delete_namespace(name)


@pytest.fixture
def agent_kubeconfig(
    namespace: str,
    agents_namespace: str,
    dev_cluster: E2ECluster,
    k8s_api: client.ApiClient,
    tmp_path: Path,
) -> Path:
    """The agent's identity: exactly the RBAC the chart installs for it."""
    try:
        chart.helm_binary()
    except chart.HelmNotFound as exc:
        pytest.skip(str(exc))
    values = {
        "listenerAgent": {
            "enabled": True,
            "listenerName": LISTENER,
            "listenerNamespace": namespace,
            "namespaces": [agents_namespace],
        }
    }
    docs = [
        d
        for d in chart.render(values, namespace=namespace)
        if d["kind"] in chart.RBAC_KINDS and d["metadata"]["name"].startswith(AGENT_SA)
    ]
    Applier(k8s_api).apply(docs)
    path = tmp_path / f"{namespace}.agent.kubeconfig"
    return dev_cluster.service_account_kubeconfig(namespace, AGENT_SA, path)


@pytest.fixture
def operator(namespace: str, emulator: Emulator, kubeconfig: Path, crds: None) -> Iterator[Any]:
    with kopf_operator(namespace, operator_env(emulator, kubeconfig)) as runner:
        yield runner
    assert runner.exit_code == 0, runner.output[-3000:]


@pytest.fixture
def agent(
    namespace: str,
    emulator: Emulator,
    agent_kubeconfig: Path,
    agent_poll_interval: float,
    tmp_path: Path,
) -> Iterator[AgentProcess]:
    """The listener agent, its rounds `agent_poll_interval` apart (tests/e2e/conftest.py's,
    which a module overrides)."""
    env = agent_env(emulator.url, agent_kubeconfig, poll_interval=agent_poll_interval)
    with running_agent(namespace, env, tmp_path / "agent.log") as process:
        yield process


def listener_body(namespace: str, agents_namespace: str) -> dict[str, Any]:
    return {
        "apiVersion": "deployplane.io/v1alpha1",
        "kind": "Listener",
        "metadata": {"name": LISTENER},
        "spec": {
            "computeType": "k8s",
            "computeId": f"cluster-{namespace}",
            "computeConfig": {"k8sNamespaces": [agents_namespace]},
        },
    }


def deployment_body(name: str, image: str, k8s_namespace: str) -> dict[str, Any]:
    return {
        "apiVersion": "deployplane.io/v1alpha1",
        "kind": "AgentDeployment",
        "metadata": {"name": name},
        "spec": {
            "source": "external_docker",
            "sourceConfig": {
                "listenerRef": {"name": LISTENER},
                "listenerConfig": {"k8sNamespace": k8s_namespace},
                "resourceSpec": {"minScale": 2},
            },
            "sourceRevisionConfig": {"imageUri": image},
        },
    }


class Cluster:
    """What `kubectl get deploy,pods,cm -n <agents>` shows."""

    def __init__(self, api: client.ApiClient, namespace: str) -> None:
        self.apps = client.AppsV1Api(api)
        self.core = client.CoreV1Api(api)
        self.namespace = namespace

    def servers(self) -> list[client.V1Deployment]:
        return list(
            self.apps.list_namespaced_deployment(self.namespace, label_selector=SERVER_LABEL).items
        )

    def rolled_out(self, image: str) -> client.V1Deployment | None:
        for server in self.servers():
            status = server.status
            if (
                server.spec.template.spec.containers[0].image == image
                and (status.observed_generation or 0) >= server.metadata.generation
                and (status.updated_replicas or 0) == server.spec.replicas
                and (status.available_replicas or 0) == server.spec.replicas
            ):
                return server
        return None

    def server_pods(self) -> list[client.V1Pod]:
        return list(
            self.core.list_namespaced_pod(self.namespace, label_selector=SERVER_LABEL).items
        )

    def owners(self) -> list[client.V1ConfigMap]:
        maps = self.core.list_namespaced_config_map(self.namespace).items
        return [
            m
            for m in maps
            if "deployplane.io/deployment-id" in (m.metadata.labels or {})
            and not m.metadata.owner_references
        ]

    def everything(self) -> list[Any]:
        return [*self.applied(), *self.core.list_namespaced_pod(self.namespace).items]

    def applied(self) -> list[Any]:
        """The objects the agent applies (pods belong to ReplicaSets and StatefulSets)."""
        return [
            *self.apps.list_namespaced_deployment(self.namespace).items,
            *self.apps.list_namespaced_stateful_set(self.namespace).items,
            *self.core.list_namespaced_service(self.namespace).items,
            *[
                s
                for s in self.core.list_namespaced_secret(self.namespace).items
                if (s.metadata.labels or {}).get("app.kubernetes.io/managed-by")
            ],
            *self.owners(),
        ]
