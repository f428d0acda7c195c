"""The in-memory server's claim on a real apiserver with kwok nodes: what the agent
renders for it (render/state.py) is accepted as is (ReadWriteOncePod, Recreate, the
preStop, the read-only root), kwok binds the claim, the rollout is DEPLOYED as the agent
observes it, and the Warning Event of a clamped scale is where `kubectl describe` shows
it. The agent's own parts against the cluster, without the control plane: the protocol
around them is tests/integration/test_dataplane_agent_state.py; real files and real
restarts are the real-node tier's (tests/e2e/test_realnode_langgraph.py).
"""

from __future__ import annotations

import asyncio
import subprocess
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client, config
from tests.support.e2ecluster import E2ECluster
from tests.support.nodes import Workloads

from deployplane.api.dataplane import ReportedStatus, ServerRuntime
from deployplane.api.models import Deployment, Listener, Revision
from deployplane.dataplane.applier import apply_rendered
from deployplane.dataplane.events import post_warnings
from deployplane.dataplane.kube import ClusterApi
from deployplane.dataplane.observe import observe_rollout
from deployplane.dataplane.render import Rendered, render
from deployplane.dataplane.rollout import Verdict
from deployplane.devcluster.kwok_stages import STORAGE_CLASS

NOW = "2026-01-01T00:00:00Z"
IMAGE = "registry.example.com/agent:1"


def _models(namespace: str) -> tuple[Deployment, Revision, Listener]:
    deployment = Deployment.model_validate(
        {
            "id": str(uuid.uuid4()),
            "tenant_id": str(uuid.uuid4()),
            "name": "threads",
            "source": "internal_source",
            "source_config": {"resource_spec": {"max_scale": 3}},
            "source_revision_config": {},
            "created_at": NOW,
            "updated_at": NOW,
            "status": "READY",
        }
    )
    revision = Revision.model_validate(
        {
            "id": str(uuid.uuid4()),
            "created_at": NOW,
            "updated_at": NOW,
            "status": "DEPLOYING",
            "source": "internal_source",
            "source_revision_config": {"image_uri": IMAGE},
        }
    )
    listener = Listener.model_validate(
        {
            "id": str(uuid.uuid4()),
            "compute_type": "k8s",
            "compute_id": "e2e",
            "compute_config": {"k8s_namespaces": [namespace]},
            "created_at": NOW,
            "updated_at": NOW,
        }
    )
    return deployment, revision, listener


async def _roll_out(kubeconfig: Path, rendered: Rendered, revision_id: str) -> Verdict:
    """What the agent does with a new revision: apply, post its warnings, observe until
    the rollout is no longer DEPLOYING (bounded only to stop a hang)."""
    configuration = client.Configuration()
    config.load_kube_config(config_file=str(kubeconfig), client_configuration=configuration)
    cluster = ClusterApi(configuration)
    try:
        applied = await apply_rendered(cluster, rendered, None)
        await post_warnings(cluster, rendered, applied)
        deadline = time.monotonic() + 120
        while True:
            verdict, _ = await observe_rollout(cluster, rendered, revision_id)
            if verdict.status is not ReportedStatus.DEPLOYING or time.monotonic() > deadline:
                return verdict
            await asyncio.sleep(0.5)
    finally:
        await cluster.aclose()


def test_the_in_memory_servers_claim_is_bound_by_kwok_and_the_rollout_deployed(
    namespace: str,
    kubeconfig: Path,
    k8s_api: client.ApiClient,
    workloads: Workloads,
    dev_cluster: E2ECluster,
) -> None:
    if not workloads.simulated:
        pytest.skip("kwok's nodes run any image; real nodes: test_realnode_langgraph.py")
    deployment, revision, listener = _models(namespace)
    rendered = render(
        deployment,
        revision,
        listener,
        IMAGE,
        secret_values={},
        database_password="",
        runtime=ServerRuntime.INMEM,
    )
    verdict = asyncio.run(_roll_out(kubeconfig, rendered, str(revision.id)))
    assert verdict.status is ReportedStatus.DEPLOYED, verdict
    # kwok serves no container log: the deploy logs say the start was not checked
    assert verdict.warnings == ()
    assert any("its saved state unchecked" in line for line in verdict.lines), verdict.lines

    base = rendered.owner["metadata"]["name"]
    claim: Any = client.CoreV1Api(k8s_api).read_namespaced_persistent_volume_claim(
        f"{base}-state", namespace
    )
    assert claim.status.phase == "Bound"
    assert claim.spec.storage_class_name == STORAGE_CLASS  # the cluster's default
    assert claim.spec.access_modes == ["ReadWriteOncePod"]
    server: Any = client.AppsV1Api(k8s_api).read_namespaced_deployment(base, namespace)
    assert server.spec.strategy.type == "Recreate"
    assert server.spec.replicas == 1

    kubectl = dev_cluster.tools.kubectl
    assert kubectl is not None
    described = subprocess.run(
        [str(kubectl), f"--kubeconfig={kubeconfig}", "describe", "deployment", base,
         "-n", namespace],
        capture_output=True, text=True, timeout=60, check=True,
    ).stdout  # fmt: skip
    # the annotation, as describe shows it (cut at 140 characters), and the Event
    assert (
        "deployplane.io/state: one pod at a time (Recreate, ReadWriteOncePod): the "
        "in-memory server writes its threads, runs and store every 10 s to claim"
    ) in " ".join(described.split())
    assert "Warning  OneReplica" in described
    assert "resource_spec max_scale 3 runs as 1 replica" in described
