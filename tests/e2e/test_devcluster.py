"""The dev cluster is a real Kubernetes API: the behaviours the operator relies on
(CEL validation, RBAC, the status subresource, namespace deletion, garbage collection)
are enforced by the apiserver built from source, not imitated."""

from __future__ import annotations

import datetime as dt
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException
from tests.support.e2e_fixture_types import ApplyManifest, ServiceAccountClient

from deployplane.devcluster import DevCluster
from deployplane.devcluster.pki import ADMIN_USER
from deployplane.devcluster.processes import pid_runs

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]


def _pinned(name: str) -> str:
    for line in (REPO / "tools" / "k8s" / "versions.env").read_text().splitlines():
        key, _, value = line.partition("=")
        if key.strip() == name:
            return value.strip()
    raise KeyError(name)


def _eventually(check: Callable[[], bool], timeout: float = 30.0, what: str = "") -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            pytest.fail(f"not within {timeout}s: {what}")
        time.sleep(0.1)


def _widget_crd(group: str) -> dict[str, Any]:
    """A namespaced CRD with a CEL rule on spec and a status subresource."""
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"widgets.{group}"},
        "spec": {
            "group": group,
            "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "subresources": {"status": {}},
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "properties": {
                                "spec": {
                                    "type": "object",
                                    "properties": {"replicas": {"type": "integer"}},
                                    "x-kubernetes-validations": [
                                        {
                                            "rule": "self.replicas <= 3",
                                            "message": "replicas must be at most 3",
                                        }
                                    ],
                                },
                                "status": {
                                    "type": "object",
                                    "properties": {"ready": {"type": "boolean"}},
                                },
                            },
                        }
                    },
                }
            ],
        },
    }


@pytest.fixture
def widgets(apply_manifest: ApplyManifest) -> str:
    """A fresh CRD group per test (CRDs are cluster-wide); deleted after the test."""
    group = f"t{uuid.uuid4().hex[:8]}.e2e.deployplane.io"
    apply_manifest(_widget_crd(group))
    return group


def _widget(name: str, replicas: int) -> dict[str, Any]:
    return {"kind": "Widget", "metadata": {"name": name}, "spec": {"replicas": replicas}}


def test_version_is_the_pinned_release(
    started_cluster: DevCluster, k8s_api: client.ApiClient
) -> None:
    want = f"v{_pinned('K8S_VERSION')}"
    assert client.VersionApi(k8s_api).get_code().git_version == want
    apiserver = subprocess.run(
        [str(started_cluster.tools.kube_apiserver), "--version"], capture_output=True, text=True
    )
    assert apiserver.stdout.strip() == f"Kubernetes {want}"
    assert started_cluster.tools.kubectl is not None
    kubectl = subprocess.run(
        [str(started_cluster.tools.kubectl), "version", "--client", "-o", "json"],
        capture_output=True,
        text=True,
    )
    assert json.loads(kubectl.stdout)["clientVersion"]["gitVersion"] == want


def test_cel_rule_refuses_a_violating_object(
    widgets: str, namespace: str, k8s_api: client.ApiClient
) -> None:
    custom = client.CustomObjectsApi(k8s_api)
    body = {"apiVersion": f"{widgets}/v1", **_widget("too-many", 5)}
    with pytest.raises(ApiException) as refused:
        custom.create_namespaced_custom_object(widgets, "v1", namespace, "widgets", body)
    assert refused.value.status == 422
    assert "replicas must be at most 3" in str(refused.value.body)
    ok = {"apiVersion": f"{widgets}/v1", **_widget("fine", 3)}
    created = custom.create_namespaced_custom_object(widgets, "v1", namespace, "widgets", ok)
    assert isinstance(created, dict)
    assert created["spec"] == {"replicas": 3}


def test_service_account_needs_rbac_rules(
    namespace: str, service_account_client: ServiceAccountClient
) -> None:
    nobody = service_account_client("nobody")
    with pytest.raises(ApiException) as forbidden:
        client.CoreV1Api(nobody).list_namespaced_config_map(namespace)
    assert forbidden.value.status == 403
    reader = service_account_client(
        "reader", rules=[{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["list"]}]
    )
    listed = client.CoreV1Api(reader).list_namespaced_config_map(namespace)
    assert isinstance(listed.items, list)
    # The Role is namespaced: the same account may not list in another namespace.
    with pytest.raises(ApiException) as elsewhere:
        client.CoreV1Api(reader).list_namespaced_config_map("default")
    assert elsewhere.value.status == 403


def test_service_account_kubeconfig_authenticates_as_the_account(
    started_cluster: DevCluster,
    namespace: str,
    service_account_client: ServiceAccountClient,
    tmp_path: Path,
) -> None:
    service_account_client("operator")
    path = started_cluster.service_account_kubeconfig(namespace, "operator", tmp_path / "sa.yaml")
    assert started_cluster.tools.kubectl is not None
    whoami = subprocess.run(
        [
            str(started_cluster.tools.kubectl),
            "--kubeconfig",
            str(path),
            "auth",
            "whoami",
            "-o",
            "json",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    username = json.loads(whoami.stdout)["status"]["userInfo"]["username"]
    assert username == f"system:serviceaccount:{namespace}:operator"


def test_status_update_does_not_change_spec(
    widgets: str, namespace: str, k8s_api: client.ApiClient
) -> None:
    custom = client.CustomObjectsApi(k8s_api)
    body = {"apiVersion": f"{widgets}/v1", **_widget("w", 1)}
    custom.create_namespaced_custom_object(widgets, "v1", namespace, "widgets", body)
    patch = {"spec": {"replicas": 2}, "status": {"ready": True}}
    after = custom.patch_namespaced_custom_object_status(
        widgets, "v1", namespace, "widgets", "w", patch
    )
    assert isinstance(after, dict)
    assert after["status"] == {"ready": True}
    assert after["spec"] == {"replicas": 1}
    # And the main resource ignores status.
    patch = {"spec": {"replicas": 3}, "status": {"ready": False}}
    after = custom.patch_namespaced_custom_object(widgets, "v1", namespace, "widgets", "w", patch)
    assert isinstance(after, dict)
    assert after["spec"] == {"replicas": 3}
    assert after["status"] == {"ready": True}


def test_audit_log_counts_writes(
    started_cluster: DevCluster, namespace: str, k8s_api: client.ApiClient
) -> None:
    core = client.CoreV1Api(k8s_api)
    since = dt.datetime.now(dt.UTC)
    cm = client.V1ConfigMap(metadata=client.V1ObjectMeta(name="counted"), data={"a": "1"})
    core.create_namespaced_config_map(namespace, cm)
    core.list_namespaced_config_map(namespace)  # a read: not counted
    assert started_cluster.count_writes(since, user=ADMIN_USER, namespace=namespace) == {
        "configmaps": 1
    }
    core.patch_namespaced_config_map("counted", namespace, {"data": {"a": "2"}})
    core.delete_namespaced_config_map("counted", namespace)
    assert started_cluster.count_writes(since, user=ADMIN_USER, namespace=namespace) == {
        "configmaps": 3
    }
    later = dt.datetime.now(dt.UTC)
    assert started_cluster.count_writes(later, user=ADMIN_USER, namespace=namespace) == {}


def test_controller_manager_deletes_namespaces_and_collects_garbage(
    namespace: str, k8s_api: client.ApiClient
) -> None:
    core = client.CoreV1Api(k8s_api)
    owner = core.create_namespaced_config_map(
        namespace, client.V1ConfigMap(metadata=client.V1ObjectMeta(name="owner"))
    )
    assert owner.metadata is not None
    assert owner.metadata.uid is not None
    ref = client.V1OwnerReference(
        api_version="v1", kind="ConfigMap", name="owner", uid=owner.metadata.uid
    )
    dependent = client.V1ConfigMap(
        metadata=client.V1ObjectMeta(name="dependent", owner_references=[ref])
    )
    core.create_namespaced_config_map(namespace, dependent)
    core.delete_namespaced_config_map("owner", namespace)

    def gone(read: Callable[[], object]) -> bool:
        try:
            read()
        except ApiException as e:
            return bool(e.status == 404)
        return False

    _eventually(
        lambda: gone(lambda: core.read_namespaced_config_map("dependent", namespace)),
        what="garbage collector deletes the dependent",
    )
    doomed = f"{namespace}-doomed"
    core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=doomed)))
    core.create_namespaced_config_map(
        doomed, client.V1ConfigMap(metadata=client.V1ObjectMeta(name="content"))
    )
    core.delete_namespace(doomed)
    _eventually(lambda: gone(lambda: core.read_namespace(doomed)), what="namespace deleted")


def _cli(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "deployplane.cli", "dev", "cluster", *args],
        capture_output=True,
        text=True,
        check=check,
        timeout=120,
    )


def _processes_mentioning(text: str) -> list[int]:
    """Pids of live processes whose command line mentions `text` (a state dir)."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            state = (proc / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if text in cmdline and state != "Z":
            found.append(int(proc.name))
    return found


def test_cli_up_is_idempotent_and_down_leaves_nothing(
    started_cluster: DevCluster, tmp_path: Path
) -> None:
    state_dir = tmp_path / "cluster"
    up = _cli("up", "--state-dir", str(state_dir))
    kubeconfig = state_dir.resolve() / "admin.kubeconfig"
    assert f"export KUBECONFIG={kubeconfig}" in up.stdout
    state = json.loads((state_dir / "state.json").read_text())
    pids = {p["name"]: (p["pid"], p["executable"]) for p in state["processes"]}
    assert set(pids) == {"etcd", "kube-apiserver", "kube-controller-manager"}
    try:
        # The servers outlived the CLI process that started them.
        assert all(pid_runs(pid, exe) for pid, exe in pids.values())
        again = _cli("up", "--state-dir", str(state_dir))
        assert "already running" in again.stdout
        # Argo CD and Flux start with a cluster, never added to a running one: refused.
        gitops = _cli("up", "--gitops", "--state-dir", str(state_dir), check=False)
        assert gitops.returncode == 1, gitops
        assert gitops.stderr.strip().count("\n") == 0, gitops.stderr
        assert "runs without --gitops" in gitops.stderr
        assert json.loads((state_dir / "state.json").read_text()) == state
        assert _cli("kubeconfig", "--state-dir", str(state_dir)).stdout.strip() == str(kubeconfig)
        assert started_cluster.tools.kubectl is not None
        nodes = subprocess.run(
            [str(started_cluster.tools.kubectl), "--kubeconfig", str(kubeconfig), "get", "ns"],
            capture_output=True,
            text=True,
            check=True,
        )
        assert "kube-system" in nodes.stdout
    finally:
        _cli("down", "--state-dir", str(state_dir))
    assert not any(pid_runs(pid, exe) for pid, exe in pids.values())
    assert _processes_mentioning(str(state_dir.resolve())) == []
    assert not state_dir.exists()


_OWNED_CLUSTER = textwrap.dedent(
    """
    import json, signal, sys, time
    from pathlib import Path
    from deployplane.devcluster import DevCluster
    # Ctrl-C as a terminal sends it: a suite started as a background job (`make test &`)
    # passes SIGINT down ignored, and Python keeps an ignored SIGINT ignored.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    with DevCluster(Path(sys.argv[1]), controller_manager=False) as cluster:
        print(json.dumps([[p.pid, p.executable] for p in cluster.server_processes]), flush=True)
        time.sleep(600)
    """
)


@pytest.mark.parametrize(
    "sig", [signal.SIGINT, signal.SIGTERM, signal.SIGKILL], ids=lambda s: str(s.name)
)
def test_owned_cluster_dies_with_its_python_process(
    started_cluster: DevCluster, tmp_path: Path, sig: signal.Signals
) -> None:
    """Ctrl-C, a kill, even SIGKILL of the test process: no server survives it."""
    state_dir = tmp_path / "owned"
    owner = subprocess.Popen(
        [sys.executable, "-c", _OWNED_CLUSTER, str(state_dir)],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "DEPLOYPLANE_TOOLS_BIN": str(started_cluster.tools.bin_dir)},
    )
    try:
        assert owner.stdout is not None
        pids = json.loads(owner.stdout.readline())
        assert len(pids) == 2
        assert all(pid_runs(pid, exe) for pid, exe in pids)
        owner.send_signal(sig)
        owner.wait(timeout=30)
        _eventually(
            lambda: not any(pid_runs(pid, exe) for pid, exe in pids),
            timeout=15,
            what=f"servers gone after {sig.name}",
        )
        assert _processes_mentioning(str(state_dir)) == []
    finally:
        if owner.poll() is None:
            owner.kill()
            owner.wait()
