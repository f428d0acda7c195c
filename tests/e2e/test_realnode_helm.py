"""`helm install` for real: the chart's operator and emulator as pods on the real node.

In the real-node tier (`make e2e-real-node`, tests/support/realnode.py) the module's
`helm_release` installs charts/deployplane with the image `make image` built
(deployplane:dev, imported into the node): the operator and the emulator become Ready
through their real probes under the chart's securityContext, `kubectl logs` and `exec`
work on the operator's pod, `/metrics` answers through its Service, and the examples'
Listener and AgentDeployment become Ready.
"""

from __future__ import annotations

import subprocess
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest
import yaml
from kubernetes import client
from tests.e2e.operator_harness import Resources, ready_for_generation
from tests.support import chart, polling, realnode
from tests.support.e2ecluster import E2ECluster

pytestmark = pytest.mark.skipif(
    realnode.skip_reason() is not None, reason=str(realnode.skip_reason())
)
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
OPERATOR = "app.kubernetes.io/component=operator"
T = TypeVar("T")


def wait_until(what: str, probe: Callable[[], T | None], within: float = 180.0) -> T:
    return polling.wait_until(what, probe, within, interval=0.5)


def kubectl(
    cluster: E2ECluster, *args: str, check: bool = True
) -> subprocess.CompletedProcess[str]:
    assert cluster.tools.kubectl is not None
    argv = [str(cluster.tools.kubectl), f"--kubeconfig={cluster.kubeconfig}", *args]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)
    if check:
        assert done.returncode == 0, f"kubectl {' '.join(args)}: {done.stdout}{done.stderr}"
    return done


def _available(apps: client.AppsV1Api, namespace: str) -> list[Any] | None:
    deployments = apps.list_namespaced_deployment(namespace).items
    if deployments and all(
        (d.status.available_replicas or 0) >= (d.spec.replicas or 1)
        and (d.status.updated_replicas or 0) >= (d.spec.replicas or 1)
        for d in deployments
    ):
        return list(deployments)
    return None


def _operator_pod(core: client.CoreV1Api, namespace: str) -> Any:
    (pod,) = core.list_namespaced_pod(namespace, label_selector=OPERATOR).items
    return pod


def _fetch(core: client.CoreV1Api, namespace: str, name: str, url: str) -> str:
    """GET `url` from a busybox pod in `namespace` (through CoreDNS and kube-proxy)."""
    fetch = f"for i in $(seq 30); do wget -q -O - {url} && exit 0; sleep 1; done; exit 1"
    core.create_namespaced_pod(
        namespace,
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name},
            "spec": {
                "restartPolicy": "Never",
                "terminationGracePeriodSeconds": 1,
                "containers": [
                    {
                        "name": "wget",
                        "image": realnode.TEST_IMAGE,
                        "imagePullPolicy": "Never",
                        "command": ["sh", "-c", fetch],
                    }
                ],
            },
        },
    )
    pod = wait_until(
        f"pod {name} to finish",
        lambda: (
            (p := core.read_namespaced_pod(name, namespace)).status.phase in ("Succeeded", "Failed")
            and p
        ),
    )
    logs = str(core.read_namespaced_pod_log(name, namespace))
    assert pod.status.phase == "Succeeded", logs
    core.delete_namespaced_pod(name, namespace, grace_period_seconds=0)
    return logs


@pytest.fixture(scope="module")
def helm_release(dev_cluster: E2ECluster) -> Iterator[dict[str, str]]:
    """The chart with image deployplane:dev, `pullPolicy: Never` (only the imported image
    will do); module-scoped, so it is uninstalled before the tier's last tests stop the
    node."""
    with chart.release(dev_cluster, f"rn-{uuid.uuid4().hex[:8]}", realnode.APP_TAG, "Never") as r:
        yield r


def test_chart_runs_for_real_and_brings_the_examples_to_ready(
    helm_release: dict[str, str], dev_cluster: E2ECluster, k8s_api: client.ApiClient
) -> None:
    namespace = helm_release["namespace"]
    core, apps = client.CoreV1Api(k8s_api), client.AppsV1Api(k8s_api)
    try:
        deployments = wait_until(
            "the operator and emulator Available", lambda: _available(apps, namespace)
        )
    except AssertionError:
        pods = kubectl(dev_cluster, "get", "pods", "-n", namespace, "-o", "wide", check=False)
        tail = kubectl(
            dev_cluster, "logs", "-n", namespace, "-l", OPERATOR, "--tail=20", check=False
        )
        raise AssertionError(f"{pods.stdout}\n{tail.stdout[-3000:]}") from None
    assert {d.metadata.name.rsplit("-", 1)[-1] for d in deployments} >= {"emulator"}
    for pod in core.list_namespaced_pod(namespace).items:
        assert pod.spec.node_name == "deployplane-node", pod.metadata.name
        for container in pod.spec.containers:
            assert container.image == realnode.APP_TAG, container.image
            assert container.readiness_probe is not None, container.name
            assert container.liveness_probe is not None, container.name
        assert all(s.ready for s in pod.status.container_statuses), pod.metadata.name

    operator = _operator_pod(core, namespace)
    security = operator.spec.containers[0].security_context
    assert security.read_only_root_filesystem is True
    assert security.allow_privilege_escalation is False
    name = operator.metadata.name
    ident = kubectl(dev_cluster, "exec", "-n", namespace, name, "--", "id", "-u").stdout
    assert ident.strip() == "10001"
    touch = kubectl(dev_cluster, "exec", "-n", namespace, name, "--", "touch", "/x", check=False)
    assert touch.returncode != 0
    assert "Read-only file system" in touch.stderr, touch
    status = kubectl(dev_cluster, "exec", "-n", namespace, name, "--", "cat", "/proc/1/status")
    assert "NoNewPrivs:\t1" in status.stdout
    logs = kubectl(dev_cluster, "logs", "-n", namespace, name).stdout
    for line in ("Activity 'configure' succeeded.", "Initial authentication has finished."):
        assert line in logs, logs[:3000]  # its start-up, logged in JSON by the pod

    names = {s.metadata.name for s in core.list_namespaced_service(namespace).items}
    service = next(n for n in names if n.endswith("-metrics"))
    metrics = _fetch(core, namespace, "metrics", f"http://{service}:9090/metrics")
    assert "# TYPE" in metrics, metrics[:2000]
    assert "deployplane" in metrics, metrics[:2000]

    resources = Resources(k8s_api, namespace)
    core.create_namespace({"metadata": {"name": "agents"}})
    try:
        docs = [
            yaml.safe_load((EXAMPLES / f).read_text())
            for f in ("secret.yaml", "listener.yaml", "agentdeployment-docker.yaml")
        ]
        core.create_namespaced_secret(namespace, docs[0])
        resources.create("listeners", docs[1])
        resources.create("agentdeployments", docs[2])
        for plural, body in (("listeners", docs[1]), ("agentdeployments", docs[2])):
            name = body["metadata"]["name"]
            obj = resources.wait(plural, name, ready_for_generation, within=300, what="Ready")
            assert obj is not None
        for plural, body in (("agentdeployments", docs[2]), ("listeners", docs[1])):
            resources.delete(plural, body["metadata"]["name"])
            resources.wait(plural, body["metadata"]["name"], lambda o: o is None, within=180)
    finally:
        core.delete_namespace("agents")
