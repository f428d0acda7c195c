"""Which nodes of a cluster take the tests' pods, and which images the pods can run.

A test that needs pods to run asks the cluster instead of assuming the dev cluster:
nodes that are Ready, not cordoned and without a NoSchedule/NoExecute taint accept a
pod without tolerations. kwok's simulated nodes (the dev cluster's `--workloads`) report
any image as pulled and Running; real nodes (kind) pull and run it, so there the tests
run images named by DEPLOYPLANE_E2E_AGENT_IMAGE (docs/kind.md).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from kubernetes import client

from deployplane.devcluster.kwok import NODE_ANNOTATION
from deployplane.devcluster.kwok_stages import FAIL_PULL_PATTERN

ENV_AGENT_IMAGE = "DEPLOYPLANE_E2E_AGENT_IMAGE"
# kwok "pulls" any image; only the pattern makes it fail.
SIMULATED_IMAGE = "registry.example.com/agent"
# No registry answers there: the pull fails on kwok (the pattern) and on a real node alike.
FAILING_IMAGE = f"registry.example.com/agent-{FAIL_PULL_PATTERN}:3"
NO_NODES = (
    "needs Ready nodes that accept pods (none here: a dev cluster started with "
    "--workloads has kwok nodes; kind has real ones)"
)
NO_KWOK = "needs the dev cluster's kwok nodes (fake images, simulated pod IPs)"
NO_AGENT_IMAGE = (
    f"needs {ENV_AGENT_IMAGE}: the nodes run real containers, so an image answering "
    "GET /ok on port 8000, tagged :1 and :2 (docs/kind.md)"
)
NO_REAL_NODES = "needs nodes that run containers (kwok's simulated nodes do not)"


def _condition(node: Any, kind: str) -> str | None:
    for c in (node.status and node.status.conditions) or []:
        if c.type == kind:
            return str(c.status)
    return None


def accepts_pods(node: Any) -> bool:
    """Ready, schedulable, and no taint a pod without tolerations would be refused by."""
    spec = node.spec
    taints = (spec and spec.taints) or []
    return (
        _condition(node, "Ready") == "True"
        and not (spec and spec.unschedulable)
        and not any(t.effect in ("NoSchedule", "NoExecute") for t in taints)
    )


def is_kwok(node: Any) -> bool:
    return NODE_ANNOTATION in (node.metadata.annotations or {})


@dataclass(frozen=True)
class Workloads:
    """The nodes that accept the tests' pods, and the images to give them."""

    nodes: tuple[str, ...]
    simulated: bool  # every one of them is a kwok node
    agent_repository: str | None  # None: real nodes but no image named

    def agent_image(self, tag: int) -> str:
        """An image whose pods become Ready (GET /ok on port 8000 answers)."""
        assert self.agent_repository is not None, NO_AGENT_IMAGE
        return f"{self.agent_repository}:{tag}"

    failing_image = FAILING_IMAGE


def workloads_of(all_nodes: list[Any], agent_image: str | None) -> Workloads:
    """`agent_image`: the repository real nodes run (DEPLOYPLANE_E2E_AGENT_IMAGE)."""
    nodes = [n for n in all_nodes if accepts_pods(n)]
    simulated = bool(nodes) and all(is_kwok(n) for n in nodes)
    repository = SIMULATED_IMAGE if simulated else agent_image or None
    return Workloads(tuple(sorted(n.metadata.name for n in nodes)), simulated, repository)


def workloads(api: client.ApiClient) -> Workloads:
    nodes = client.CoreV1Api(api).list_node().items
    return workloads_of(nodes, os.environ.get(ENV_AGENT_IMAGE))


def kwok_node_names(api: client.ApiClient) -> list[str]:
    """The kwok nodes, Ready or not (a test checks their state)."""
    return sorted(n.metadata.name for n in client.CoreV1Api(api).list_node().items if is_kwok(n))
