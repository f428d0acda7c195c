"""A change that makes no revision reaches what runs, and Ready waits for it (issue 35),
end to end on the dev cluster with kwok nodes: `kubectl patch` of an AgentDeployment's
resources -> operator PATCH (no revision; the deployment becomes
`remote_reconciled=false`) -> the listener agent (the chart's RBAC and settings)
renders the revision again and applies what changed -> its report makes it reconciled
-> the resource is Ready at the new generation, never before.

Every wait is bounded only to stop a hang; nothing asserts how long a step took.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from kubernetes import client
from tests.support.dataplane_fixtures import (
    AGD,
    LST,
    agents_namespace,
    deployment_body,
    emulator,
    listener_body,
    operator,
    wait_until,
)
from tests.support.operator_harness import Resources, condition, ready_for_generation
from tests.support.vendor_agent import (
    VendorAgent,
    agent_writes,
    custom,
    deploy,
    vendor_agent,
    vendor_crds,
)

__all__ = ["agents_namespace", "emulator", "operator", "vendor_agent", "vendor_crds"]

WAITING = "waiting for the listener to apply the change (remote_reconciled=false)"
SLOW_ROUNDS = 3.0


def server_hpa(api: client.ApiClient, namespace: str) -> Any:
    hpas = client.AutoscalingV2Api(api).list_namespaced_horizontal_pod_autoscaler(namespace)
    (server,) = [h for h in hpas.items if not h.metadata.name.endswith("-queue")]
    return server


def scale(resources: Resources, name: str, **resource_spec: int) -> int:
    """Patches the resource's resourceSpec (merge) and returns its new generation."""
    resources.patch(AGD, name, {"spec": {"sourceConfig": {"resourceSpec": resource_spec}}})
    patched = resources.get(AGD, name)
    assert patched is not None
    generation: int = patched["metadata"]["generation"]
    return generation


def ready_once(
    resources: Resources, name: str, generation: int, applied: Callable[[], bool]
) -> dict[str, Any]:
    """Waits for Ready at `generation`, checking at every look that Ready never comes
    before `applied()` (what runs reflects the change); returns the resource."""
    seen: list[str] = []

    def probe() -> dict[str, Any] | None:
        obj = resources.get(AGD, name)
        reconciling = condition(obj, "Reconciling")
        if reconciling.get("status") == "True":
            seen.append(reconciling.get("message", ""))
        if obj is not None and ready_for_generation(obj):
            assert obj["metadata"]["generation"] == generation
            assert applied(), f"Ready at generation {generation} before the change ran"
            return obj
        return None

    began = time.monotonic()
    obj = wait_until(f"Ready at generation {generation}", probe, within=180)
    print(f"Ready at generation {generation} {time.monotonic() - began:.1f} s after the patch")
    print("Reconciling messages seen:", sorted(set(seen)))
    assert set(seen) <= {WAITING}  # a change without a revision waits for nothing else
    return obj


def test_a_max_scale_change_reaches_the_server_hpa_before_the_resource_is_ready(
    operator: Any,
    vendor_agent: VendorAgent,
    resources: Resources,
    namespace: str,
    agents_namespace: str,
    k8s_api: client.ApiClient,
) -> None:
    resources.create(LST, listener_body(namespace, agents_namespace))
    # Rounds 3 s apart: a resource Ready before the agent applied the change would be
    # seen Ready for that long (the operator polls every 2 s at first).
    vendor_agent.start({}, poll_interval=SLOW_ROUNDS).wait_running()
    obj = deploy(resources, "scale-bot", agents_namespace, vendor_agent.image)
    revision = obj["status"]["latestRevisionId"]
    assert server_hpa(k8s_api, agents_namespace).spec.max_replicas == 2
    before = agent_writes(k8s_api, agents_namespace)

    generation = scale(resources, "scale-bot", minScale=1, maxScale=5)

    def five() -> bool:
        return bool(server_hpa(k8s_api, agents_namespace).spec.max_replicas == 5)

    obj = ready_once(resources, "scale-bot", generation, five)
    wait_until("the server HPA's new maxReplicas", five, within=60)
    assert obj["status"]["latestRevisionId"] == revision  # no new revision
    assert "awaitingDataPlane" not in obj["status"]
    # The re-render applied every object again, and only the HPA and the owner (its
    # render digest) changed: server-side apply of the others wrote nothing.
    after = agent_writes(k8s_api, agents_namespace)
    changed = {key for key in before.keys() | after.keys() if before.get(key) != after.get(key)}
    assert {kind for kind, _ in changed} <= {"V2HorizontalPodAutoscaler", "V1ConfigMap"}, changed


def test_queue_max_scale_with_keda_makes_the_scaled_object_before_the_resource_is_ready(
    operator: Any,
    vendor_agent: VendorAgent,
    resources: Resources,
    namespace: str,
    agents_namespace: str,
    k8s_api: client.ApiClient,
) -> None:
    resources.create(LST, listener_body(namespace, agents_namespace))
    vendor_agent.start({"autoscaler": "keda"}, poll_interval=SLOW_ROUNDS).wait_running()
    # No queue maximum yet: no ScaledObject (the issue's `docker-a`).
    resources.create(AGD, deployment_body("queue-bot", vendor_agent.image, agents_namespace))
    resources.wait(AGD, "queue-bot", ready_for_generation, within=180, what="Ready")

    def scaled_objects() -> list[Any]:
        return custom(k8s_api, "keda.sh", "v1alpha1", agents_namespace, "scaledobjects")

    assert scaled_objects() == []
    generation = scale(resources, "queue-bot", queueMinScale=1, queueMaxScale=3)

    def three() -> bool:
        found = scaled_objects()
        return len(found) == 1 and found[0]["spec"]["maxReplicaCount"] == 3

    obj = ready_once(resources, "queue-bot", generation, three)
    wait_until("the ScaledObject's new maxReplicaCount", three, within=60)
    assert obj["status"]["revision"]["status"] == "DEPLOYED"
