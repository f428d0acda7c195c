"""`make e2e KUBECONFIG=...` on a cluster the test session did not start.

The proof: a dev cluster started as a separate process (`deployplane dev cluster up`,
as a user would start kind), and `make e2e KUBECONFIG=<its kubeconfig>` run against it
for a subset of the suite that covers the existing-cluster fixtures (CRDs installed,
namespaces per run, ServiceAccount kubeconfigs, the operator, kstatus, audit-log skip).
Afterwards nothing of the run is left in that cluster: no test namespace, and the CRDs
it installed are gone again.

With DEPLOYPLANE_E2E_INSTALL=helm (`make e2e KUBECONFIG=... INSTALL=helm`, for kind):
the chart's own operator and emulator, from the image loaded into the cluster, bring an
AgentDeployment to Ready.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException
from tests.e2e.conftest import EXISTING, RUN_LABEL
from tests.e2e.operator_harness import REPO, Resources, ready_for_generation
from tests.support.nodes import NO_REAL_NODES, Workloads

from deployplane.devcluster import ToolsNotFound, attach, find_tools

# One test per fixture the existing-cluster mode replaces or adds.
SUBSET = " or ".join(
    [
        "test_examples_are_accepted",  # CRDs installed by the session
        "test_argocd_health_follows_a_live_resource",  # ServiceAccount kubeconfig, operator
        "test_kstatus_and_argocd_follow",  # kstatus on live objects
        "test_steady_state_makes_no_kubernetes_writes",  # audit-log counts: skipped with the reason
    ]
)


# The inner run chooses its cluster from make's command line alone.
_NOT_INHERITED = ("DEPLOYPLANE_E2E_KUBECONFIG", "DEPLOYPLANE_E2E_INSTALL", "PYTEST_ADDOPTS")


def _cli(*args: str, state: Path, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    cli = [sys.executable, "-m", "deployplane.cli", "dev", "cluster"]
    return subprocess.run(
        [*cli, *args, "--state-dir", str(state)],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=REPO,
    )


@pytest.mark.timeout(1500)
def test_make_e2e_runs_on_a_cluster_started_as_another_process(tmp_path: Path) -> None:
    if EXISTING:
        pytest.skip("already on an existing cluster: this test starts one of its own")
    try:
        find_tools()
    except ToolsNotFound as e:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"end-to-end tests need the dev cluster binaries: {e}", pytrace=False)
        pytest.skip(f"no dev cluster binaries: {e}")
    state = tmp_path / "cluster"
    up = _cli("up", state=state)
    assert up.returncode == 0, up.stdout + up.stderr
    other = attach(state)
    assert other is not None
    try:
        run = subprocess.run(
            ["make", "e2e", f"KUBECONFIG={other.kubeconfig}", f"E2E_ARGS=-k '{SUBSET}' -rs"],
            capture_output=True,
            text=True,
            timeout=1400,
            cwd=REPO,
            env={k: v for k, v in os.environ.items() if k not in _NOT_INHERITED},
        )  # fmt: skip
        out = run.stdout + run.stderr
        assert run.returncode == 0, out[-6000:]
        assert "e2e on the existing cluster of" in out
        summary = re.search(r"(\d+) passed, 1 skipped, \d+ deselected", out)
        assert summary, out[-3000:]
        assert int(summary[1]) >= 4, out[-3000:]  # the examples are parametrized
        assert "failed" not in out.splitlines()[-1]
        print(out[-1500:])  # the run's own summary, in this test's captured output
        assert "its audit log is not ours to read" in out  # the skip says why
        with other.admin() as api:
            _assert_nothing_left(api)
    finally:
        down = _cli("down", state=state)
        assert down.returncode == 0, down.stdout + down.stderr


def _assert_nothing_left(api: client.ApiClient) -> None:
    core = client.CoreV1Api(api)
    extensions = client.ApiextensionsV1Api(api)
    deadline = time.monotonic() + 120  # namespace and CRD deletion finish in the background
    while True:
        left = [ns.metadata.name for ns in core.list_namespace(label_selector=RUN_LABEL).items]
        crds = [
            c.metadata.name
            for c in extensions.list_custom_resource_definition().items
            if c.metadata.name.endswith(".deployplane.io")
        ]
        if not left and not crds:
            return
        assert time.monotonic() < deadline, f"left behind: namespaces {left}, CRDs {crds}"
        time.sleep(0.5)


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
