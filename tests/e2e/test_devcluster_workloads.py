"""The dev cluster rolls workloads out: kube-scheduler + workload controllers + kwok nodes.

Each test waits for a state the cluster must reach (bounded waits that fail with what
was last seen); none asserts on how long it took. On an existing cluster the tests that
run fake images need kwok nodes (`kwok_nodes`), the others nodes that accept pods
(`workloads`, real ones too); each skips with the reason when the cluster lacks them.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable
from typing import Any, TypeVar

from kubernetes import client
from tests.support.nodes import Workloads

from deployplane.api.models import Deployment, Listener, Revision
from deployplane.dataplane.applier import apply_rendered, get_owner
from deployplane.dataplane.kube import ClusterApi
from deployplane.dataplane.render import Rendered, render
from deployplane.devcluster.kwok import FAIL_PULL_PATTERN

T = TypeVar("T")
NAME_LABEL = "app.kubernetes.io/name"
WAIT = 60.0


def wait_until(what: str, probe: Callable[[], T | None], timeout: float = WAIT) -> T:
    """Poll `probe` until it returns something truthy; fail naming `what` otherwise."""
    deadline = time.monotonic() + timeout
    while True:
        value = probe()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.2)


def deployment_manifest(
    name: str,
    image: str,
    *,
    replicas: int = 2,
    progress_deadline: int | None = None,
    requests: dict[str, str] | None = None,
) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "app", "image": image}
    if requests:
        container["resources"] = {"requests": requests}
    spec: dict[str, Any] = {
        "replicas": replicas,
        "selector": {"matchLabels": {"app": name}},
        "template": {
            "metadata": {"labels": {"app": name}},
            "spec": {"containers": [container]},
        },
    }
    if progress_deadline is not None:
        spec["progressDeadlineSeconds"] = progress_deadline
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name}, "spec": spec}


def rolled_out(apps: client.AppsV1Api, namespace: str, name: str, replicas: int) -> bool:
    """What `kubectl rollout status` checks: observed, updated and available replicas."""
    d = apps.read_namespaced_deployment(name, namespace)
    s = d.status
    return bool(
        (s.observed_generation or 0) >= d.metadata.generation
        and (s.updated_replicas or 0) == replicas
        and (s.available_replicas or 0) == replicas
        and (s.replicas or 0) == replicas
    )


def condition(obj: Any, kind: str) -> Any:
    for c in obj.status.conditions or []:
        if c.type == kind:
            return c
    return None


def pods(core: client.CoreV1Api, namespace: str, app: str) -> list[Any]:
    return list(core.list_namespaced_pod(namespace, label_selector=f"app={app}").items)


def test_fake_nodes_are_ready_with_realistic_capacity(
    kwok_nodes: list[str], k8s_api: client.ApiClient
) -> None:
    core = client.CoreV1Api(k8s_api)
    nodes = {n.metadata.name: n for n in core.list_node(label_selector="type=kwok").items}
    assert sorted(nodes) == kwok_nodes
    for node in nodes.values():
        assert condition(node, "Ready").status == "True"
        assert not node.spec.taints  # schedulable without tolerations
        assert node.status.allocatable == {
            "cpu": "4",
            "memory": "16Gi",
            "pods": "110",
            "ephemeral-storage": "50Gi",
        }


def test_a_deployment_rolls_out_and_rolls_to_a_new_image(
    k8s_api: client.ApiClient, apply_manifest: Any, namespace: str, kwok_nodes: list[str]
) -> None:
    apps, core = client.AppsV1Api(k8s_api), client.CoreV1Api(k8s_api)
    apply_manifest(deployment_manifest("web", "registry.example/web:v1"))
    wait_until("2 available replicas", lambda: rolled_out(apps, namespace, "web", 2))
    running = pods(core, namespace, "web")
    assert len(running) == 2
    for pod in running:
        assert pod.spec.node_name in kwok_nodes
        assert condition(pod, "Ready").status == "True"
        assert pod.status.phase == "Running"
        assert pod.status.pod_ip.startswith("10.244.")

    apply_manifest(deployment_manifest("web", "registry.example/web:v2"))
    wait_until("the rolling update", lambda: rolled_out(apps, namespace, "web", 2))
    sets = apps.list_namespaced_replica_set(namespace, label_selector="app=web").items
    by_image = {rs.spec.template.spec.containers[0].image: rs for rs in sets}
    assert set(by_image) == {"registry.example/web:v1", "registry.example/web:v2"}
    assert by_image["registry.example/web:v2"].status.available_replicas == 2
    assert by_image["registry.example/web:v1"].spec.replicas == 0
    progressing = condition(apps.read_namespaced_deployment("web", namespace), "Progressing")
    assert progressing.reason == "NewReplicaSetAvailable"
    wait_until(
        "old pods gone",
        lambda: (
            {p.spec.containers[0].image for p in pods(core, namespace, "web")}
            == {"registry.example/web:v2"}
        ),
    )


def test_a_fail_pull_image_never_becomes_ready_and_exceeds_the_progress_deadline(
    k8s_api: client.ApiClient, apply_manifest: Any, namespace: str, workloads: Workloads
) -> None:
    apps, core = client.AppsV1Api(k8s_api), client.CoreV1Api(k8s_api)
    image = f"registry.example/web:{FAIL_PULL_PATTERN}"
    apply_manifest(deployment_manifest("broken", image, progress_deadline=10))

    def waiting_reasons() -> set[str]:
        reasons = set()
        for pod in pods(core, namespace, "broken"):
            for status in pod.status.container_statuses or []:
                if status.state.waiting is not None:
                    reasons.add(status.state.waiting.reason)
        return reasons

    wait_until("ErrImagePull", lambda: "ErrImagePull" in waiting_reasons())
    wait_until("ImagePullBackOff", lambda: "ImagePullBackOff" in waiting_reasons())
    for pod in pods(core, namespace, "broken"):
        assert pod.status.phase == "Pending"
        assert condition(pod, "Ready").status == "False"

    def deadline_exceeded() -> Any:
        c = condition(apps.read_namespaced_deployment("broken", namespace), "Progressing")
        return c is not None and c.status == "False" and c.reason == "ProgressDeadlineExceeded"

    wait_until("ProgressDeadlineExceeded", deadline_exceeded)
    assert not apps.read_namespaced_deployment("broken", namespace).status.available_replicas


def test_requests_beyond_any_node_stay_pending_unschedulable(
    k8s_api: client.ApiClient, apply_manifest: Any, namespace: str, workloads: Workloads
) -> None:
    core = client.CoreV1Api(k8s_api)
    too_big = {"cpu": "100"}  # nodes have 4 cores each
    manifest = deployment_manifest("huge", "registry.example/web:v1", replicas=1, requests=too_big)
    apply_manifest(manifest)

    def unschedulable() -> Any:
        found = pods(core, namespace, "huge")
        return found and all(
            (c := condition(p, "PodScheduled")) is not None and c.reason == "Unschedulable"
            for p in found
        )

    wait_until("PodScheduled=False Unschedulable", unschedulable)
    (pod,) = pods(core, namespace, "huge")
    assert pod.status.phase == "Pending"
    assert pod.spec.node_name is None
    assert "Insufficient cpu" in condition(pod, "PodScheduled").message


def _models(namespace: str) -> tuple[Deployment, Revision, Listener]:
    now = "2026-01-01T00:00:00Z"
    deployment = Deployment.model_validate(
        {
            "id": str(uuid.uuid4()),
            "tenant_id": str(uuid.uuid4()),  # required by the published contract
            "name": "rendered agent",
            "source": "external_docker",
            "source_config": {
                "listener_config": {"k8s_namespace": namespace},
                "resource_spec": {"min_scale": 2, "max_scale": 3, "cpu": 0.5, "memory_mb": 512},
            },
            "source_revision_config": {"image_uri": "registry.example/agent:1"},
            "secrets": [{"name": "API_KEY"}],
            "created_at": now,
            "updated_at": now,
            "status": "READY",
        }
    )
    revision = Revision.model_validate(
        {
            "id": str(uuid.uuid4()),
            "created_at": now,
            "updated_at": now,
            "status": "DEPLOYING",
            "source": "external_docker",
            "source_revision_config": {"image_uri": "registry.example/agent:1"},
        }
    )
    listener = Listener.model_validate(
        {
            "id": str(uuid.uuid4()),
            "compute_type": "k8s",
            "compute_id": "dev",
            "compute_config": {"k8s_namespaces": [namespace]},
            "created_at": now,
            "updated_at": now,
        }
    )
    return deployment, revision, listener


def _apply_as_the_agent(k8s_api: client.ApiClient, rendered: Rendered) -> list[dict[str, Any]]:
    """`rendered` applied by the listener agent's own applier (the owner as the cluster
    has it now); the rendered objects as the cluster answered, the owner left out."""

    async def apply() -> list[dict[str, Any]]:
        cluster = ClusterApi(k8s_api)
        try:
            owner = await get_owner(cluster, rendered)
            return await apply_rendered(cluster, rendered, owner)
        finally:
            await cluster.aclose()

    return asyncio.run(apply())


def test_rendered_objects_roll_out_apply_idempotently_and_go_with_their_owner(
    k8s_api: client.ApiClient, namespace: str, workload_images: Workloads
) -> None:
    """The renderer's output, applied as the listener agent applies it (its own
    `apply_rendered`: the owner first, an autoscaled Deployment created at its minimum and
    its count then left to the autoscaler), against a real apiserver: valid, ready,
    stable, collectable."""
    apps, core = client.AppsV1Api(k8s_api), client.CoreV1Api(k8s_api)
    deployment, revision, listener = _models(namespace)
    rendered = render(
        deployment,
        revision,
        listener,
        workload_images.agent_image(1),
        secret_values={"API_KEY": "k"},
        database_password="pw",
    )
    first = _apply_as_the_agent(k8s_api, rendered)
    server = rendered.owner["metadata"]["name"]
    wait_until("the agent server rolled out", lambda: rolled_out(apps, namespace, server, 2))

    def database_ready() -> bool:
        status = apps.read_namespaced_stateful_set(f"{server}-db", namespace).status
        return (status.ready_replicas or 0) == 1

    wait_until("PostgreSQL ready with its volume bound", database_ready)
    (claim,) = core.list_namespaced_persistent_volume_claim(namespace).items
    assert claim.status.phase == "Bound"

    # Applying the same revision again changes nothing: no new resourceVersion. (Compared
    # between two later applies: since the first, controllers have written status.)
    second = _apply_as_the_agent(k8s_api, rendered)
    third = _apply_as_the_agent(k8s_api, rendered)
    assert [o["metadata"]["resourceVersion"] for o in third] == [
        o["metadata"]["resourceVersion"] for o in second
    ]
    assert [o["metadata"].get("generation") for o in third] == [
        o["metadata"].get("generation") for o in first
    ]

    core.delete_namespaced_config_map(server, namespace, propagation_policy="Foreground")

    def all_gone() -> bool:
        return not (
            apps.list_namespaced_deployment(namespace).items
            or apps.list_namespaced_stateful_set(namespace).items
            or core.list_namespaced_secret(namespace, label_selector=f"{NAME_LABEL}={server}").items
            or core.list_namespaced_persistent_volume_claim(namespace).items
            or core.list_namespaced_pod(namespace).items
        )

    wait_until("every rendered object garbage-collected with the owner", all_gone)
