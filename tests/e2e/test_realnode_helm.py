"""`helm install` for real: the chart's operator, emulator and listener agent as pods on
the real node, and the operator's faults for real.

In the real-node tier (`make e2e-real-node`, tests/support/realnode.py) the module's
`helm_release` installs charts/deployplane once with the image `make image` built
(deployplane:dev, imported into the node): two operator replicas (Kopf peering), the
emulator, and the listener agent of the example Listener (values as in
examples/helm/real-node-values.yaml). The operator and the emulator become Ready through
their real probes under the chart's securityContext, `kubectl logs` and `exec` work on
the operator's pod, and `/metrics` answers through its Service. (The chart's listener
agent deploying the examples as real containers, in a namespace enforcing Pod Security
`restricted`, and removing them is tests/e2e/test_realnode_upgrade.py's: made under the
previous release, then a new revision and the deletion under this one.) Then, on the
same release: the active replica's
process killed -9 mid-burst (the kubelet restarts it) and the active pod deleted
mid-create; no deployment is created twice, every resource is Ready again.
"""

from __future__ import annotations

import base64
import contextlib
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import httpx
import pytest
import yaml
from kubernetes import client
from tests.support import chart, operatorstory, polling, realnode
from tests.support.e2ecluster import E2ECluster
from tests.support.operator_fixtures import docker
from tests.support.operator_harness import Resources
from tests.support.reliability_scenarios import (
    PEERING_GROUP,
    PEERING_PLURAL,
    PEERING_VERSION,
    Report,
    check_converged,
    is_ready,
)

from deployplane.devcluster.realnode import images

pytestmark = pytest.mark.skipif(
    realnode.skip_reason() is not None, reason=str(realnode.skip_reason())
)
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
OPERATOR = "app.kubernetes.io/component=operator"
AGENT = "app.kubernetes.io/component=listener-agent"
COMPONENT = "app.kubernetes.io/component"
AGD = "agentdeployments"
# The release's values beyond the image and the emulator: what
# examples/helm/real-node-values.yaml gives `make demo REAL_NODE=1` (a unit test keeps
# the two alike), with the release namespace as the Listener's.
VALUES_FILE = EXAMPLES / "helm" / "real-node-values.yaml"
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


def _operator_pods(core: client.CoreV1Api, namespace: str) -> list[Any]:
    return list(core.list_namespaced_pod(namespace, label_selector=OPERATOR).items)


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
def helm_release(
    dev_cluster: E2ECluster, k8s_api: client.ApiClient, real_node_session: realnode.Session
) -> Iterator[dict[str, str]]:
    """One release for the module, with examples/helm/real-node-values.yaml: image
    deployplane:dev with `pullPolicy: Never` (only the imported image will do), two
    operator replicas, the listener agent of the example Listener. Uninstalled before
    the tier's last tests stop the node."""
    values = yaml.safe_load(VALUES_FILE.read_text())
    for key in ("image", "emulator"):  # chart.release sets these
        values.pop(key)
    (agents,) = values["listenerAgent"]["namespaces"]
    core = client.CoreV1Api(k8s_api)
    core.create_namespace({"metadata": {"name": agents}})  # the agent's Role lives there
    try:
        run_id = f"rn-{uuid.uuid4().hex[:8]}"
        with chart.release(dev_cluster, run_id, realnode.APP_TAG, "Never", values) as r:
            yield r
    finally:
        core.delete_namespace(agents)


@pytest.fixture(scope="module")
def control_plane(
    helm_release: dict[str, str], dev_cluster: E2ECluster, k8s_api: client.ApiClient
) -> Iterator[InClusterEmulator]:
    """The chart's emulator through `kubectl port-forward`, with the operator's key."""
    namespace = helm_release["namespace"]
    apps, core = client.AppsV1Api(k8s_api), client.CoreV1Api(k8s_api)
    # Whichever test of the module runs first (a shuffled order, or `-k` one of them),
    # the emulator's pod must run before a port can be forwarded to it.
    wait_until("the release Available", lambda: _available(apps, namespace))
    (operator,) = apps.list_namespaced_deployment(namespace, label_selector=OPERATOR).items
    env = {e.name: e for e in operator.spec.template.spec.containers[0].env}
    ref = env["DEPLOYPLANE_API_KEY"].value_from.secret_key_ref
    secret = core.read_namespaced_secret(ref.name, namespace)
    key = base64.b64decode(secret.data[ref.key]).decode()
    service = next(
        s.metadata.name
        for s in core.list_namespaced_service(namespace).items
        if s.metadata.name.endswith("-emulator")
    )
    with _port_forward(dev_cluster, namespace, f"svc/{service}", 8124) as url:
        yield InClusterEmulator(url, key)


@contextlib.contextmanager
def _port_forward(cluster: E2ECluster, namespace: str, target: str, port: int) -> Iterator[str]:
    assert cluster.tools.kubectl is not None
    argv = [str(cluster.tools.kubectl), f"--kubeconfig={cluster.kubeconfig}", "port-forward"]
    argv += ["-n", namespace, "--address", "127.0.0.1", target, f":{port}"]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()  # Forwarding from 127.0.0.1:PORT -> 8124
        assert line.startswith("Forwarding from 127.0.0.1:"), line
        yield f"http://127.0.0.1:{line.split(':')[1].split()[0]}"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


class InClusterEmulator:
    """The chart's emulator, as `check_converged` counts deployments on it."""

    def __init__(self, url: str, api_key: str) -> None:
        self.url, self.api_key, self.prefix = url, api_key, ""

    def all_deployments(self) -> list[dict[str, Any]]:
        """The workspace's deployments named `prefix`... (every page): one burst's."""
        found: list[dict[str, Any]] = []
        with httpx.Client(base_url=self.url, headers={"X-Api-Key": self.api_key}) as http:
            while True:
                params = {"limit": 100, "offset": len(found)}
                page = http.get("/v2/deployments", params=params, timeout=10)
                page.raise_for_status()
                resources: list[dict[str, Any]] = page.json()["resources"]
                found += resources
                if len(resources) < 100:
                    return [d for d in found if str(d["name"]).startswith(self.prefix)]


def test_chart_runs_for_real(
    helm_release: dict[str, str], dev_cluster: E2ECluster, k8s_api: client.ApiClient
) -> None:
    namespace = helm_release["namespace"]
    core, apps = client.CoreV1Api(k8s_api), client.AppsV1Api(k8s_api)
    try:
        deployments = wait_until(
            "the operator, emulator and agent Available", lambda: _available(apps, namespace)
        )
    except AssertionError:
        pods = kubectl(dev_cluster, "get", "pods", "-n", namespace, "-o", "wide", check=False)
        tail = kubectl(
            dev_cluster, "logs", "-n", namespace, "-l", OPERATOR, "--tail=20", check=False
        )
        raise AssertionError(f"{pods.stdout}\n{tail.stdout[-3000:]}") from None
    assert {d.metadata.name.rsplit("-", 1)[-1] for d in deployments} >= {"emulator", "agent"}
    for pod in core.list_namespaced_pod(namespace).items:
        assert pod.spec.node_name == "deployplane-node", pod.metadata.name
        for container in pod.spec.containers:
            assert container.image == realnode.APP_TAG, container.image
            assert container.readiness_probe is not None, container.name
            assert container.liveness_probe is not None, container.name
        assert all(s.ready for s in pod.status.container_statuses), pod.metadata.name

    operators = _operator_pods(core, namespace)
    assert len(operators) == 2
    operator = operators[0]
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


def _pod_of(core: client.CoreV1Api, namespace: str, component: str) -> str:
    (name,) = [
        p.metadata.name
        for p in core.list_namespaced_pod(namespace).items
        if p.metadata.labels[COMPONENT] == component
    ]
    return str(name)


def _container_status(core: client.CoreV1Api, namespace: str, name: str) -> Any:
    (status,) = core.read_namespaced_pod(name, namespace).status.container_statuses
    return status


def _ctr_signal(session: realnode.Session, container_id: str, signal_name: str) -> None:
    """`ctr tasks kill --signal` of a container's main process, inside the node."""
    ctr = session.cluster.tools.bin_dir / "ctr"
    cid = container_id.split("://", 1)[1]
    argv = images.ctr_argv(session.holder_pid(), ctr, "tasks", "kill", "--signal", signal_name, cid)
    done = subprocess.run(argv, capture_output=True, text=True, timeout=30, check=False)
    assert done.returncode == 0, done.stderr


def _liveness_failures(core: client.CoreV1Api, namespace: str, pods: tuple[str, ...]) -> list[str]:
    """The Unhealthy events of failed liveness probes of `pods` (each one a step towards
    the kubelet restarting the container)."""
    events = core.list_namespaced_event(namespace, field_selector="reason=Unhealthy").items
    return [
        f"{e.involved_object.name}: {e.message}"
        for e in events
        if e.involved_object.name in pods and "Liveness probe failed" in (e.message or "")
    ]


def _local_disk(cluster: E2ECluster, namespace: str, pod: str, path: str) -> int:
    """Kibibytes under `path` in `pod` (du inside the container)."""
    out = kubectl(cluster, "exec", "-n", namespace, pod, "--", "du", "-sk", path).stdout
    return int(out.split()[0])


def test_a_frozen_operator_is_restarted_and_one_waiting_on_the_control_plane_is_not(
    helm_release: dict[str, str],
    dev_cluster: E2ECluster,
    k8s_api: client.ApiClient,
    real_node_session: realnode.Session,
) -> None:
    """The probes for real, on the two replicas at once: replica A's process frozen
    (SIGSTOP: the event loop answers nothing) is restarted by the kubelet through its
    liveness probe; replica B, running but with the control plane unreachable (the
    emulator's Service selects no pod), turns unready and is not restarted, and so does
    the listener agent. None had restarted before: the probes kept them Ready through the
    module's normal work. The control plane back, all are Ready again."""
    namespace = helm_release["namespace"]
    core, apps = client.CoreV1Api(k8s_api), client.AppsV1Api(k8s_api)
    wait_until("the release Available", lambda: _available(apps, namespace))
    first, second = sorted(p.metadata.name for p in _operator_pods(core, namespace))
    before = {name: _container_status(core, namespace, name) for name in (first, second)}
    assert all(s.ready for s in before.values()), before
    # The probes restarted neither through the module's other work (the tests run in a
    # shuffled order, and one of them kills a replica on purpose: that restart is its own).
    assert _liveness_failures(core, namespace, (first, second)) == []
    tmp_kib = _local_disk(dev_cluster, namespace, first, "/tmp")
    logs = kubectl(dev_cluster, "logs", "-n", namespace, first).stdout
    emulator_pod, agent = (_pod_of(core, namespace, c) for c in ("emulator", "listener-agent"))
    agent_before = _container_status(core, namespace, agent)
    assert agent_before.ready, agent_before
    assert agent_before.restart_count == 0, agent_before
    data_kib = _local_disk(dev_cluster, namespace, emulator_pod, "/data")
    print(f"operator /tmp {tmp_kib} KiB, its log {len(logs.encode()) // 1024} KiB; "
          f"emulator /data {data_kib} KiB")  # fmt: skip

    service = next(
        s for s in core.list_namespaced_service(namespace).items
        if s.metadata.name.endswith("-emulator")
    )  # fmt: skip
    selector = dict(service.spec.selector)
    nowhere = {"deployplane.io/test": "control-plane-unreachable"}
    started = time.monotonic()
    core.patch_namespaced_service(service.metadata.name, namespace, {"spec": {"selector": nowhere}})
    try:
        _ctr_signal(real_node_session, before[first].container_id, "SIGSTOP")
        unready = wait_until(
            "replica B unready",
            lambda: (s := _container_status(core, namespace, second)) and not s.ready and s,
            within=120,
        )
        seen_unready = time.monotonic() - started
        agent_unready = wait_until(
            "the listener agent unready",
            lambda: (s := _container_status(core, namespace, agent)) and not s.ready and s,
            within=120,
        )
        seen_agent_unready = time.monotonic() - started
        restarted = wait_until(
            "the kubelet to restart frozen replica A",
            lambda: (
                (s := _container_status(core, namespace, first)).restart_count
                > before[first].restart_count
                and s
            ),
            within=120,
        )
        seen_restart = time.monotonic() - started
        assert restarted.last_state.terminated is not None
        assert unready.restart_count == before[second].restart_count
        assert agent_unready.restart_count == agent_before.restart_count
        events = core.list_namespaced_event(
            namespace, field_selector=f"involvedObject.name={first},reason=Unhealthy"
        ).items
        assert any("Liveness probe failed" in (e.message or "") for e in events), events
    finally:  # a merge patch: the added key goes (null), the others stay as they were
        back = {"spec": {"selector": {**dict.fromkeys(nowhere), **selector}}}
        core.patch_namespaced_service(service.metadata.name, namespace, back)
        restored = core.read_namespaced_service(service.metadata.name, namespace)
        assert restored.spec.selector == selector
    wait_until(
        "both replicas and the listener agent Ready again",
        lambda: all(_container_status(core, namespace, n).ready for n in (first, second, agent)),
        within=180,
    )
    seen_ready = time.monotonic() - started
    after = _container_status(core, namespace, second)
    assert after.restart_count == before[second].restart_count, "B was never restarted"
    agent_after = _container_status(core, namespace, agent)
    assert agent_after.restart_count == agent_before.restart_count, "nor was the agent"
    print(
        f"control plane cut and A frozen -> B unready {seen_unready:.0f} s, the agent "
        f"unready {seen_agent_unready:.0f} s, A restarted {seen_restart:.0f} s; control "
        f"plane back -> all Ready {seen_ready:.0f} s"
    )


def _active_operator(custom: client.CustomObjectsApi, core: client.CoreV1Api, ns: str) -> str:
    """The replica that reconciles: the highest-priority peer among the running pods."""

    def active() -> str | None:
        running = {
            p.metadata.name
            for p in _operator_pods(core, ns)
            if p.status.container_statuses and all(s.ready for s in p.status.container_statuses)
        }
        (peering,) = custom.list_namespaced_custom_object(
            PEERING_GROUP, PEERING_VERSION, ns, PEERING_PLURAL
        )["items"]
        peers = {k: v for k, v in (peering.get("status") or {}).items() if k in running}
        if len(peers) < 2:
            return None
        return str(max(peers, key=lambda pod: int(peers[pod].get("priority", 0))))

    return wait_until("both replicas peered", active)


def _burst(resources: Resources, prefix: str, count: int) -> list[str]:
    names = [f"{prefix}-{i:02d}" for i in range(count)]
    for name in names:
        resources.create(AGD, docker(name))
    return names


def _converged(
    resources: Resources, emulator: InClusterEmulator, prefix: str, names: list[str]
) -> None:
    """Every resource of the burst Ready, exactly one deployment each on the control
    plane (counted by name through its API); then the burst is deleted."""
    wanted = set(names)
    wait_until(
        "every resource of the burst Ready",
        lambda: (
            all(is_ready(o) for o in resources.list_all(AGD) if o["metadata"]["name"] in wanted)
            and len([o for o in resources.list_all(AGD) if o["metadata"]["name"] in wanted])
            == len(names)
        ),
        within=300,
    )
    items = [o for o in resources.list_all(AGD) if o["metadata"]["name"] in wanted]
    emulator.prefix = prefix
    report = Report(prefix)
    check_converged(report, emulator, names, items)
    assert not report.violations, report.lines()
    assert report.figures["duplicates found"] == 0
    for name in names:
        resources.delete(AGD, name)
    wait_until(
        "the burst deleted",
        lambda: not [o for o in resources.list_all(AGD) if o["metadata"]["name"] in wanted],
        within=180,
    )


def _in_flight(resources: Resources, names: list[str]) -> bool:
    """Some of the burst have a deployment on the control plane, not all are Ready."""
    items = [o for o in resources.list_all(AGD) if o["metadata"]["name"] in set(names)]
    started = [o for o in items if (o.get("status") or {}).get("deploymentId")]
    return bool(started) and not all(is_ready(o) for o in items)


def test_operator_process_killed_mid_burst_is_restarted_by_the_kubelet(
    helm_release: dict[str, str],
    control_plane: InClusterEmulator,
    k8s_api: client.ApiClient,
    real_node_session: realnode.Session,
) -> None:
    """kill -9 of the active replica's main process (its containerd task) while a burst
    of AgentDeployments is being reconciled: the kubelet restarts the container, the
    replicas agree on an active one again, and the burst converges without duplicates."""
    namespace = helm_release["namespace"]
    core, custom = client.CoreV1Api(k8s_api), client.CustomObjectsApi(k8s_api)
    resources = Resources(k8s_api, namespace)
    active = _active_operator(custom, core, namespace)
    before = core.read_namespaced_pod(active, namespace).status.container_statuses[0]
    names = _burst(resources, "killed", 10)
    wait_until("the burst in flight", lambda: _in_flight(resources, names))
    session = real_node_session
    container_id = before.container_id.split("://", 1)[1]
    argv = images.ctr_argv(
        session.holder_pid(), session.cluster.tools.bin_dir / "ctr", "tasks", "kill",
        "--signal", "SIGKILL", container_id,
    )  # fmt: skip
    done = subprocess.run(argv, capture_output=True, text=True, timeout=30, check=False)
    assert done.returncode == 0, done.stderr

    def restarted() -> Any:
        (status,) = core.read_namespaced_pod(active, namespace).status.container_statuses
        return status.restart_count > before.restart_count and status.ready and status

    after = wait_until("the kubelet to restart the operator's container", restarted)
    assert after.last_state.terminated.exit_code == 137  # SIGKILL
    _converged(resources, control_plane, "killed", names)


def test_active_pod_deleted_mid_create_creates_nothing_twice(
    helm_release: dict[str, str],
    control_plane: InClusterEmulator,
    dev_cluster: E2ECluster,
    k8s_api: client.ApiClient,
    tmp_path: Path,
) -> None:
    """The active replica's pod deleted (`kubectl delete pod`) while a burst is being
    created on the control plane: the standby (or the Deployment's new pod) takes over,
    and every resource is Ready with exactly one deployment, marked with its name. Both
    replicas act on the burst meanwhile: the deleted pod finishes the passes it had
    begun during its grace period while the standby, resumed, begins its own."""
    namespace = helm_release["namespace"]
    core, custom = client.CoreV1Api(k8s_api), client.CustomObjectsApi(k8s_api)
    apps = client.AppsV1Api(k8s_api)
    resources = Resources(k8s_api, namespace)
    active = _active_operator(custom, core, namespace)
    pods = [p.metadata.name for p in _operator_pods(core, namespace)]
    assert dev_cluster.tools.kubectl is not None
    with operatorstory.followed_logs(
        dev_cluster.tools.kubectl, dev_cluster.kubeconfig, namespace, pods, tmp_path
    ) as logs:
        names = _burst(resources, "deleted", 10)
        wait_until("the burst in flight", lambda: _in_flight(resources, names))
        core.delete_namespaced_pod(active, namespace)
        try:
            _converged(resources, control_plane, "deleted", names)
        finally:  # shown with a failure (pytest captures it)
            story = operatorstory.event_lines(core, namespace, "AgentDeployment", names)
            story += operatorstory.log_lines(logs, ["deleted-", "Signal", "ause", "esum"])
            print(f"active replica {active} deleted; what the replicas did:", *story, sep="\n")
    wait_until(
        "two operator replicas again, the deleted pod gone",
        lambda: (
            _available(apps, namespace)
            and active not in {p.metadata.name for p in _operator_pods(core, namespace)}
        ),
    )
