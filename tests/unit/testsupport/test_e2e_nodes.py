"""Which nodes the end-to-end tests count as taking their pods (tests/support/nodes.py),
and which images they then run: kwok's fake ones only where every such node is kwok's."""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes import client
from tests.support.nodes import FAILING_IMAGE, NO_AGENT_IMAGE, accepts_pods, workloads_of

from deployplane.devcluster.kwok import NODE_ANNOTATION


def node(
    name: str,
    *,
    ready: str = "True",
    unschedulable: bool | None = None,
    taints: list[tuple[str, str]] | None = None,
    kwok: bool = False,
) -> Any:
    annotations = {NODE_ANNOTATION: "fake"} if kwok else None
    return client.V1Node(
        metadata=client.V1ObjectMeta(name=name, annotations=annotations),
        spec=client.V1NodeSpec(
            unschedulable=unschedulable,
            taints=[client.V1Taint(key=k, effect=e) for k, e in taints or []] or None,
        ),
        status=client.V1NodeStatus(conditions=[client.V1NodeCondition(type="Ready", status=ready)]),
    )


@pytest.mark.parametrize(
    ("n", "accepted"),
    [
        (node("a"), True),
        (node("a", ready="False"), False),
        (node("a", ready="Unknown"), False),
        (node("a", unschedulable=True), False),
        (node("a", taints=[("node-role.kubernetes.io/control-plane", "NoSchedule")]), False),
        (node("a", taints=[("node.kubernetes.io/unreachable", "NoExecute")]), False),
        (node("a", taints=[("soft", "PreferNoSchedule")]), True),
        (client.V1Node(metadata=client.V1ObjectMeta(name="a")), False),  # no status yet
    ],
)
def test_a_node_accepts_pods_when_ready_schedulable_and_untainted(n: Any, accepted: bool) -> None:
    assert accepts_pods(n) is accepted


def test_kwok_nodes_run_fake_images() -> None:
    found = workloads_of([node("kwok-node-1", kwok=True), node("kwok-node-0", kwok=True)], None)
    assert found.nodes == ("kwok-node-0", "kwok-node-1")
    assert found.simulated
    assert found.agent_image(2) == "registry.example.com/agent:2"
    assert found.failing_image == FAILING_IMAGE


def test_real_nodes_run_the_named_image_or_none() -> None:
    nodes = [node("kind-control-plane"), node("cordoned", unschedulable=True)]
    named = workloads_of(nodes, "deployplane-e2e-agent")
    assert (named.nodes, named.simulated) == (("kind-control-plane",), False)
    assert named.agent_image(1) == "deployplane-e2e-agent:1"
    unnamed = workloads_of(nodes, None)
    assert unnamed.agent_repository is None
    with pytest.raises(AssertionError, match="DEPLOYPLANE_E2E_AGENT_IMAGE"):
        unnamed.agent_image(1)
    assert "DEPLOYPLANE_E2E_AGENT_IMAGE" in NO_AGENT_IMAGE


def test_a_mix_of_kwok_and_real_nodes_is_real() -> None:
    # Pods may land on the real node, which would try to pull the fake image.
    found = workloads_of([node("kwok-node-0", kwok=True), node("worker")], None)
    assert not found.simulated
    assert found.agent_repository is None


def test_no_node_taking_pods_is_none() -> None:
    found = workloads_of([node("kwok-node-0", kwok=True, ready="False")], "x")
    assert found.nodes == ()
    assert not found.simulated
