"""The data plane end to end on the dev cluster with kwok nodes (or on any cluster whose
nodes accept the pods: real ones run DEPLOYPLANE_E2E_AGENT_IMAGE, see docs/kind.md).

`kubectl apply` of a Listener and an AgentDeployment with `listenerRef` -> operator ->
emulator (normal mode: the data-plane extension is an emulator extension) -> the
listener agent (`deployplane listener run`, a real process, with only the chart's
RBAC) -> a Deployment rolled out on kwok nodes -> revision DEPLOYED -> resource Ready.
The listener's namespace enforces the `restricted` Pod Security standard: every pod
the data plane renders is admitted by the apiserver as it is.
Every wait is bounded only to stop a hang; nothing asserts how long a step took.
"""

from __future__ import annotations

from typing import Any

import httpx
from kubernetes import client
from kubernetes.utils import parse_quantity
from tests.support import realnode
from tests.support.dataplane_fixtures import (
    AGD,
    COMPONENT,
    LST,
    Cluster,
    agent,
    agent_kubeconfig,
    agents_namespace,
    deployment_body,
    emulator,
    listener_body,
    operator,
    wait_until,
)
from tests.support.deploymentwatch import DeploymentWatch
from tests.support.listener_agent import AgentProcess
from tests.support.nodes import Workloads
from tests.support.operator_harness import (
    API_KEY,
    WORKSPACE,
    Emulator,
    Resources,
    condition,
    ready_for_generation,
)
from tests.support.podsecurity import enforces_restricted

from deployplane.dataplane.kube import SCALE_MANAGER

__all__ = [
    "agent",
    "agent_kubeconfig",
    "agents_namespace",
    "emulator",
    "operator",
]  # fixtures

# The HPA controller's field manager: it writes the scale subresource under it.
HPA_CONTROLLER = "kube-controller-manager"


def revision_work(emulator: Emulator, obj: dict[str, Any]) -> dict[str, Any]:
    """The extension's record of the agent's last report on the resource's revision."""
    status = obj["status"]
    listener_id = status.get("listenerId") or ""
    with httpx.Client(
        base_url=emulator.url, headers={"X-Api-Key": API_KEY, "X-Tenant-Id": WORKSPACE}
    ) as http:
        deployment = http.get(f"/v2/deployments/{status['deploymentId']}").json()
        listener_id = deployment["source_config"]["listener_id"]
        path = (
            f"/_dataplane/v1/listeners/{listener_id}/deployments/{deployment['id']}"
            f"/revisions/{deployment['latest_revision_id']}"
        )
        answer = http.get(path)
        assert answer.status_code == 200, answer.text
        work: dict[str, Any] = answer.json()
        return work


def stalled(obj: dict[str, Any] | None) -> bool:
    return condition(obj, "Stalled").get("status") == "True"


def scale_as_the_hpa_does(k8s_api: client.ApiClient, namespace: str, name: str, count: int) -> None:
    """What the HPA controller does to its target: read the scale subresource, write
    it back with its count (an update, under the controller's field manager)."""
    apps = client.AppsV1Api(k8s_api)
    scale = apps.read_namespaced_deployment_scale(name, namespace)
    scale.spec.replicas = count
    apps.replace_namespaced_deployment_scale(name, namespace, scale, field_manager=HPA_CONTROLLER)


def replica_owners(deployment: client.V1Deployment) -> set[str]:
    """The field managers that own the Deployment's spec.replicas."""
    return {
        entry.manager
        for entry in deployment.metadata.managed_fields or []
        if "f:replicas" in ((entry.fields_v1 or {}).get("f:spec") or {})
    }


def test_listener_agent_rolls_out_updates_fails_and_deletes(
    operator: Any,
    agent: AgentProcess,
    resources: Resources,
    emulator: Emulator,
    namespace: str,
    agents_namespace: str,
    k8s_api: client.ApiClient,
    workload_images: Workloads,
) -> None:
    cluster = Cluster(k8s_api, agents_namespace)
    resources.create(LST, listener_body(namespace, agents_namespace))
    agent.wait_running()
    first = workload_images.agent_image(1)
    resources.create(AGD, deployment_body("bot", first, agents_namespace))
    obj = resources.wait(AGD, "bot", ready_for_generation, within=180, what="Ready")
    assert obj is not None
    assert obj["status"]["revision"]["status"] == "DEPLOYED"
    server = wait_until("the server rolled out", lambda: cluster.rolled_out(first))
    assert server.spec.replicas == 2
    pods = cluster.server_pods()
    assert len(pods) == 2
    assert all(p.spec.node_name in workload_images.nodes for p in pods)

    second = workload_images.agent_image(2)
    resources.patch(AGD, "bot", {"spec": {"sourceRevisionConfig": {"imageUri": second}}})
    obj = resources.wait(AGD, "bot", ready_for_generation, within=180, what="Ready again")
    assert obj is not None
    assert obj["status"]["revision"]["status"] == "DEPLOYED"
    rolled = wait_until("the update rolled out", lambda: cluster.rolled_out(second))
    assert rolled.metadata.generation >= 2  # the same Deployment, updated in place
    assert len(cluster.servers()) == 1

    failing = workload_images.failing_image
    resources.patch(AGD, "bot", {"spec": {"sourceRevisionConfig": {"imageUri": failing}}})
    obj = resources.wait(AGD, "bot", stalled, within=180, what="Stalled")
    assert obj is not None
    assert obj["status"]["revision"]["status"] == "DEPLOY_FAILED"
    assert condition(obj, "Stalled")["reason"] == "DeployFailed"
    message = revision_work(emulator, obj)["message"] or ""
    assert message.startswith(("ErrImagePull", "ImagePullBackOff")), message
    assert failing in message

    resources.delete(AGD, "bot")
    resources.wait(AGD, "bot", lambda o: o is None, within=180, what="deleted")
    wait_until("every object gone", lambda: cluster.everything() == [] or None)


def test_a_new_revision_keeps_the_count_an_autoscaler_holds(
    operator: Any,
    agent: AgentProcess,
    resources: Resources,
    namespace: str,
    agents_namespace: str,
    k8s_api: client.ApiClient,
    workload_images: Workloads,
) -> None:
    """An HPA's work as its controller does it: the agent server, created at min_scale
    2, is scaled to 4 through its scale subresource; then a new revision. A watch on the
    Deployment from before the change until the new revision is rolled out and the
    resource Ready sees its count at 4 in every version: the agent applies it without
    `replicas`, so no revision sets the count back to min_scale. The namespace enforces
    `restricted` throughout."""
    enforces_restricted(k8s_api, agents_namespace)
    cluster = Cluster(k8s_api, agents_namespace)
    resources.create(LST, listener_body(namespace, agents_namespace))
    agent.wait_running()
    first, second = workload_images.agent_image(1), workload_images.agent_image(2)
    body = deployment_body("scaled", first, agents_namespace)
    body["spec"]["sourceConfig"]["resourceSpec"] = {"minScale": 2, "maxScale": 6}
    resources.create(AGD, body)
    resources.wait(AGD, "scaled", ready_for_generation, within=240, what="Ready")
    server = wait_until("the server rolled out", lambda: cluster.rolled_out(first))
    assert server.spec.replicas == 2  # created at its minimum
    assert replica_owners(server) == {SCALE_MANAGER}  # not the agent's own manager
    name = server.metadata.name

    scale_as_the_hpa_does(k8s_api, agents_namespace, name, 4)
    scaled = wait_until(
        "4 servers available",
        lambda: (d := cluster.rolled_out(first)) is not None and d.spec.replicas == 4 and d,
    )
    assert replica_owners(scaled) == {HPA_CONTROLLER}
    with DeploymentWatch(k8s_api, agents_namespace, name) as watched:
        resources.patch(AGD, "scaled", {"spec": {"sourceRevisionConfig": {"imageUri": second}}})
        obj = resources.wait(
            AGD, "scaled", ready_for_generation, within=240, what="Ready with the new image"
        )
        rolled = wait_until("the new revision rolled out", lambda: cluster.rolled_out(second))
    assert obj is not None
    assert obj["status"]["revision"]["status"] == "DEPLOYED"
    counts = [state.replicas or 0 for state in watched.states]  # None: the default, 1
    during = [s for s in watched.states if s.image == second]
    print(
        f"{len(watched.states)} versions of the Deployment watched, counts {sorted(set(counts))}"
        f"; available pods during the rollout: min {min(s.available for s in during)}, "
        f"pods at once: max {max(s.current for s in during)}"
    )
    assert during, "the watch saw no version with the new image"
    assert min(counts) == 4, counts
    assert rolled.spec.replicas == 4
    assert rolled.status.available_replicas == 4
    assert replica_owners(rolled) == {HPA_CONTROLLER}
    servers = [p for p in cluster.server_pods() if p.metadata.deletion_timestamp is None]
    assert len([p for p in servers if p.spec.containers[0].image == second]) == 4


def test_agent_killed_mid_rollout_carries_on_without_duplicates_or_orphans(
    operator: Any,
    agent: AgentProcess,
    resources: Resources,
    namespace: str,
    agents_namespace: str,
    k8s_api: client.ApiClient,
    workload_images: Workloads,
) -> None:
    cluster = Cluster(k8s_api, agents_namespace)
    resources.create(LST, listener_body(namespace, agents_namespace))
    agent.wait_running()
    image = workload_images.agent_image(1)
    resources.create(AGD, deployment_body("survivor", image, agents_namespace))
    wait_until("the rollout to start", lambda: cluster.servers())
    agent.kill9()
    agent.start()
    obj = resources.wait(AGD, "survivor", ready_for_generation, within=180, what="Ready")
    assert obj is not None
    wait_until("the server rolled out", lambda: cluster.rolled_out(image))
    (owner,) = cluster.owners()
    assert len(cluster.servers()) == 1
    wait_until("exactly the wanted server pods", lambda: len(cluster.server_pods()) == 2)
    for item in cluster.applied():
        if item.metadata.uid != owner.metadata.uid:
            refs = item.metadata.owner_references or []
            assert [r.uid for r in refs] == [owner.metadata.uid], item.metadata.name


def test_a_namespace_the_listener_does_not_have_fails_with_that_message(
    operator: Any,
    agent: AgentProcess,
    resources: Resources,
    emulator: Emulator,
    namespace: str,
    agents_namespace: str,
    k8s_api: client.ApiClient,
) -> None:
    resources.create(LST, listener_body(namespace, agents_namespace))
    agent.wait_running()
    resources.create(AGD, deployment_body("lost", "registry.example.com/agent:1", "elsewhere"))
    obj = resources.wait(AGD, "lost", stalled, within=180, what="Stalled")
    assert obj is not None
    assert obj["status"]["revision"]["status"] == "DEPLOY_FAILED"
    message = revision_work(emulator, obj)["message"] or ""
    assert "namespace elsewhere is not one of" in message
    assert agents_namespace in message
    assert Cluster(k8s_api, agents_namespace).everything() == []


def _ready(pod: client.V1Pod) -> bool:
    conditions = pod.status.conditions or []
    return any(c.type == "Ready" and c.status == "True" for c in conditions)


def _fetch_ok(k8s_api: client.ApiClient, namespace: str, service: str) -> str:
    """GET http://<service>:8000/ok from a busybox pod (CoreDNS, then kube-proxy)."""
    core = client.CoreV1Api(k8s_api)
    fetch = f"for i in $(seq 30); do wget -q -O - http://{service}:8000/ok && exit 0; sleep 1; done"
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "fetch-ok"},
        "spec": {
            "restartPolicy": "Never",
            "terminationGracePeriodSeconds": 1,
            "containers": [
                {
                    "name": "wget",
                    "image": realnode.TEST_IMAGE,
                    "imagePullPolicy": "Never",
                    "command": ["sh", "-c", fetch + "; exit 1"],
                    # the namespace admits only what `restricted` allows
                    "securityContext": {
                        "runAsNonRoot": True,
                        "runAsUser": 65534,
                        "allowPrivilegeEscalation": False,
                        "capabilities": {"drop": ["ALL"]},
                        "seccompProfile": {"type": "RuntimeDefault"},
                    },
                }
            ],
        },
    }
    core.create_namespaced_pod(namespace, pod)
    done = wait_until(
        "the fetching pod to finish",
        lambda: (
            (p := core.read_namespaced_pod("fetch-ok", namespace)).status.phase
            in ("Succeeded", "Failed")
            and p
        ),
    )
    logs = str(core.read_namespaced_pod_log("fetch-ok", namespace))
    assert done.status.phase == "Succeeded", logs
    core.delete_namespaced_pod("fetch-ok", namespace, grace_period_seconds=0)
    return logs


def _deployment_status(emulator: Emulator, obj: dict[str, Any]) -> str:
    with httpx.Client(
        base_url=emulator.url, headers={"X-Api-Key": API_KEY, "X-Tenant-Id": WORKSPACE}
    ) as http:
        deployment = http.get(f"/v2/deployments/{obj['status']['deploymentId']}").json()
        return str(deployment["status"])


def test_real_containers_deployed_only_once_every_pod_passed_its_probe(
    operator: Any,
    agent: AgentProcess,
    resources: Resources,
    emulator: Emulator,
    namespace: str,
    agents_namespace: str,
    k8s_api: client.ApiClient,
    workload_images: Workloads,
    real_node_session: realnode.Session,
) -> None:
    """On the real node (the tier's session): the agent server, queue worker, Redis and
    PostgreSQL run as containers of the images built here; the revision is DEPLOYED once
    every pod of the rollout (server, queue, Redis) is Ready through its readiness probe,
    the deployment READY once PostgreSQL's is; `/ok` answers through the Service from
    another pod."""
    assert not workload_images.simulated
    enforces_restricted(k8s_api, agents_namespace)
    cluster = Cluster(k8s_api, agents_namespace)
    resources.create(LST, listener_body(namespace, agents_namespace))
    agent.wait_running()
    image = workload_images.agent_image(1)
    resources.create(AGD, deployment_body("live", image, agents_namespace))
    obj = resources.wait(AGD, "live", ready_for_generation, within=240, what="Ready")
    assert obj is not None
    assert obj["status"]["revision"]["status"] == "DEPLOYED"
    pods = {p.metadata.name: p for p in cluster.core.list_namespaced_pod(agents_namespace).items}
    by_component = {p.metadata.labels[COMPONENT]: p for p in pods.values()}
    assert set(by_component) == {"agent-server", "queue", "redis", "database"}, pods
    for pod in pods.values():  # Ready when the resource was: their probes had passed
        if pod.metadata.labels[COMPONENT] != "database":
            assert _ready(pod), (pod.metadata.name, pod.status.conditions)
    wait_until("deployment READY", lambda: _deployment_status(emulator, obj) == "READY")
    pods = {p.metadata.name: p for p in cluster.core.list_namespaced_pod(agents_namespace).items}
    images = {c.image for p in pods.values() for c in p.spec.containers}
    assert images == {image, realnode.POSTGRES_IMAGE, realnode.REDIS_IMAGE}, images
    for pod in pods.values():
        assert _ready(pod), (pod.metadata.name, pod.status.conditions)
        assert all(c.readiness_probe is not None for c in pod.spec.containers), pod.spec
        assert all(s.ready and s.state.running for s in pod.status.container_statuses)
        # admitted by `restricted`, and running as non-root users
        assert pod.spec.security_context.run_as_non_root is True, pod.metadata.name
    (service,) = [
        s.metadata.name
        for s in cluster.core.list_namespaced_service(agents_namespace).items
        if (s.metadata.labels or {}).get(COMPONENT) == "agent-server"
    ]
    assert _fetch_ok(k8s_api, agents_namespace, service).strip() == "ok"


def _revisions(emulator: Emulator, obj: dict[str, Any]) -> list[dict[str, Any]]:
    """The deployment's revisions as the published API lists them, newest first."""
    with httpx.Client(
        base_url=emulator.url, headers={"X-Api-Key": API_KEY, "X-Tenant-Id": WORKSPACE}
    ) as http:
        page = http.get(f"/v2/deployments/{obj['status']['deploymentId']}/revisions").json()
        found: list[dict[str, Any]] = page["resources"]
        return found


def test_an_unschedulable_rollout_recovers_by_a_smaller_memory_request_on_the_real_node(
    operator: Any,
    agent: AgentProcess,
    resources: Resources,
    emulator: Emulator,
    namespace: str,
    agents_namespace: str,
    k8s_api: client.ApiClient,
    workload_images: Workloads,
    real_node_session: realnode.Session,
) -> None:
    """On the real node: an app that asks for more memory than the node has is
    Unschedulable (the real scheduler's verdict), so its revision fails; patching
    `memoryMb` down, and nothing else, ends Ready at the new generation on a new revision
    of the same image, its server pods running as containers with the new request."""
    assert not workload_images.simulated
    cluster = Cluster(k8s_api, agents_namespace)
    (node,) = cluster.core.list_node().items
    node_mb = int(parse_quantity(node.status.allocatable["memory"]) / 10**6)
    resources.create(LST, listener_body(namespace, agents_namespace))
    agent.wait_running()
    image = workload_images.agent_image(1)
    body = deployment_body("roomy", image, agents_namespace)
    body["spec"]["sourceConfig"]["resourceSpec"] = {"minScale": 1, "memoryMb": 2 * node_mb}
    resources.create(AGD, body)
    obj = resources.wait(AGD, "roomy", stalled, within=240, what="Stalled")
    assert obj is not None
    failed = condition(obj, "Stalled")
    assert failed["reason"] == "DeployFailed", failed
    assert "Unschedulable" in failed["message"], failed
    assert "Insufficient memory" in failed["message"], failed
    assert "the next change of the spec rolls a new revision" in failed["message"], failed

    fix = {"spec": {"sourceConfig": {"resourceSpec": {"memoryMb": 256}}}}
    resources.patch(AGD, "roomy", fix)
    obj = resources.wait(AGD, "roomy", ready_for_generation, within=240, what="Ready")
    assert obj is not None
    assert obj["metadata"]["generation"] == 2
    assert not stalled(obj), obj["status"]["conditions"]
    history = _revisions(emulator, obj)
    assert [r["status"] for r in history] == ["DEPLOYED", "DEPLOY_FAILED"], history
    assert [r["source_revision_config"]["image_uri"] for r in history] == [image, image]
    running = [
        p
        for p in cluster.server_pods()
        if p.metadata.deletion_timestamp is None and p.status.phase == "Running"
    ]
    assert running, "no server pod of the fixed revision runs"
    for pod in running:
        assert pod.spec.node_name == node.metadata.name
        assert pod.spec.containers[0].resources.requests["memory"] == "256M", pod.spec
        assert pod.spec.containers[0].image == image
        assert all(s.ready and s.state.running for s in pod.status.container_statuses)
