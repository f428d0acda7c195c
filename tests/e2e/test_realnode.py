"""The real node: a kubelet, containerd and kube-proxy in a sandbox run real pods.

Skipped unless DEPLOYPLANE_E2E_REAL_NODE=1 (`make e2e-real-node`), the node's binaries
are built (`make node-tools`) and this runs as root. The tier's one cluster with a real
node and no kwok nodes (`real_node_session`, tests/support/realnode.py); the last tests
of the whole tier (RUN_LAST) stop it and check that the host is as it was (links,
routes, iptables, ip_forward, mounts, netns) and that no process is left, then start
and interrupt one through the CLI.
"""

from __future__ import annotations

import contextlib
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client
from tests.support import hostsnapshot, realnode
from tests.support.realnode import pod_manifest

from deployplane.devcluster import DevCluster
from deployplane.devcluster.realnode import cgroups, layout, script
from deployplane.devcluster.realnode import node as real_node

pytestmark = pytest.mark.skipif(
    realnode.skip_reason() is not None, reason=str(realnode.skip_reason())
)
# They stop the session's real node (tests/e2e/conftest.py runs them after every other test).
RUN_LAST = (
    "test_down_leaves_nothing",
    "test_interrupted_up_is_cleaned_by_the_next_up",
    "test_node_of_a_killed_owner_is_cleaned_by_the_next_start",
)


class RealNode:
    def __init__(self, cluster: DevCluster, before: dict[str, object]) -> None:
        self.cluster = cluster
        self.before = before
        self.api = cluster.api_client()
        self.core = client.CoreV1Api(self.api)

    def kubectl(self, *args: str, timeout: float = 60, check: bool = True) -> str:
        kubectl = self.cluster.tools.kubectl
        assert kubectl is not None
        done = subprocess.run(
            [str(kubectl), f"--kubeconfig={self.cluster.kubeconfig}", *args],
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        if check and done.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)}: {done.stdout}{done.stderr}")
        return done.stdout + (done.stderr if not check else "")

    def apply(self, manifest: dict[str, Any]) -> None:
        subprocess.run(
            [
                str(self.cluster.tools.kubectl),
                f"--kubeconfig={self.cluster.kubeconfig}",
                "apply",
                "-f",
                "-",
            ],
            input=yaml.safe_dump(manifest),
            text=True,
            check=True,
            capture_output=True,
        )

    def pod(self, name: str, namespace: str) -> Any:
        return self.core.read_namespaced_pod(name, namespace)

    def wait_pod(self, name: str, namespace: str, done: Any, timeout: float = 90) -> Any:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            pod = self.pod(name, namespace)
            if done(pod):
                return pod
            time.sleep(0.2)
        raise AssertionError(f"pod {name}: {self.pod(name, namespace).status}")


@pytest.fixture
def node(real_node_session: realnode.Session) -> RealNode:
    return RealNode(real_node_session.cluster, real_node_session.before)


@pytest.fixture
def ns(node: RealNode) -> Iterator[str]:
    name = f"rn-{uuid.uuid4().hex[:8]}"
    node.core.create_namespace({"metadata": {"name": name}})
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:  # the ServiceAccount admission needs `default`
        if node.core.list_namespaced_service_account(name).items:
            break
        time.sleep(0.1)
    yield name
    with contextlib.suppress(client.ApiException):
        node.core.delete_namespace(name)


def _phase(phase: str) -> Any:
    return lambda pod: pod.status.phase == phase


def _running_ready(pod: Any) -> bool:
    return any(c.type == "Ready" and c.status == "True" for c in pod.status.conditions or [])


def test_node_is_ready_with_kubelet_and_containerd(node: RealNode) -> None:
    wide = node.kubectl("get", "nodes", "-o", "wide")
    row = next(line for line in wide.splitlines() if line.startswith(layout.NODE_NAME))
    assert " Ready " in row, wide
    assert "v1.36.3" in row, wide
    assert "containerd://2.3.4" in row, wide
    assert layout.NODE_IP in row


def test_pod_runs_and_logs_show_its_output(node: RealNode, ns: str) -> None:
    node.apply(
        pod_manifest("hello", ns, ["echo", "hello from a real container"], restartPolicy="Never")
    )
    node.wait_pod("hello", ns, _phase("Succeeded"))
    assert node.kubectl("logs", "-n", ns, "hello").strip() == "hello from a real container"


def test_exec_and_port_forward(node: RealNode, ns: str) -> None:
    node.apply(
        pod_manifest(
            "web",
            ns,
            [
                "sh",
                "-c",
                "mkdir -p /www && echo served > /www/index.html && httpd -f -p 8080 -h /www",
            ],
        )
    )
    node.wait_pod("web", ns, _running_ready)
    assert node.kubectl("exec", "-n", ns, "web", "--", "cat", "/www/index.html").strip() == "served"
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    kubectl = node.cluster.tools.kubectl
    forward = subprocess.Popen(
        [
            str(kubectl),
            f"--kubeconfig={node.cluster.kubeconfig}",
            "port-forward",
            "-n",
            ns,
            "pod/web",
            f"{port}:8080",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        assert forward.stdout is not None
        assert b"Forwarding from" in forward.stdout.readline()
        with socket.create_connection(("127.0.0.1", port), timeout=10) as c:
            c.sendall(b"GET /index.html HTTP/1.0\r\n\r\n")
            reply = c.makefile("rb").read()
        assert reply.endswith(b"served\n"), reply
    finally:
        forward.terminate()
        forward.wait(10)


def test_cluster_ip_service_by_dns_name_from_another_pod(node: RealNode, ns: str) -> None:
    serve = "mkdir -p /www && echo backend-ok > /www/index.html && httpd -f -p 8080 -h /www"
    node.apply(pod_manifest("backend", ns, ["sh", "-c", serve]))
    node.apply(
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "backend", "namespace": ns},
            "spec": {"selector": {"app": "backend"}, "ports": [{"port": 80, "targetPort": 8080}]},
        }
    )
    node.wait_pod("backend", ns, _running_ready)
    # `backend` through the pod's search path: CoreDNS, then kube-proxy's ClusterIP rules.
    fetch = "for i in $(seq 20); do wget -q -O - http://backend/ && exit 0; sleep 1; done; exit 1"
    node.apply(pod_manifest("client", ns, ["sh", "-c", fetch], restartPolicy="Never"))
    pod = node.wait_pod("client", ns, lambda p: p.status.phase in ("Succeeded", "Failed"))
    assert pod.status.phase == "Succeeded", node.kubectl("logs", "-n", ns, "client", check=False)
    assert "backend-ok" in node.kubectl("logs", "-n", ns, "client")


def _waiting_reason(pod: Any) -> str | None:
    for status in pod.status.container_statuses or []:
        if status.state and status.state.waiting:
            return str(status.state.waiting.reason)
    return None


@pytest.mark.parametrize(
    ("policy", "reasons"),
    [("Never", {"ErrImageNeverPull"}), ("IfNotPresent", {"ErrImagePull", "ImagePullBackOff"})],
)
def test_missing_image_fails_with_a_clear_reason(
    node: RealNode, ns: str, policy: str, reasons: set[str]
) -> None:
    manifest = pod_manifest(
        "missing",
        ns,
        ["true"],
        container={"image": "registry.example.com/not-imported:1", "imagePullPolicy": policy},
    )
    node.apply(manifest)
    pod = node.wait_pod("missing", ns, lambda p: _waiting_reason(p) in reasons, timeout=60)
    assert pod.status.phase == "Pending"


def _guard_marks(node: RealNode) -> int:
    """Packets the egress guard has refused so far (its MARK rule's counter)."""
    holder = next(p for p in node.cluster.server_processes if p.name == real_node.HOLDER)
    out = subprocess.run(
        [
            "nsenter",
            f"--target={holder.pid}",
            "--net",
            "iptables",
            "-w",
            "-t",
            "mangle",
            "-L",
            script.GUARD_CHAIN,
            "-v",
            "-x",
            "-n",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    mark = next(line for line in out.splitlines() if " MARK " in f" {line} ")
    return int(mark.split()[0])


def test_egress_to_outside_is_refused_at_once(node: RealNode, ns: str) -> None:
    before = _guard_marks(node)
    # TEST-NET-2: documentation space, never a real host. Refused (ICMP), not timed out.
    probe = "nc -w 20 198.51.100.1 80 </dev/null; echo exit=$?"
    node.apply(pod_manifest("egress", ns, ["sh", "-c", probe], restartPolicy="Never"))
    node.wait_pod("egress", ns, _phase("Succeeded"))
    logs = node.kubectl("logs", "-n", ns, "egress")
    assert "exit=1" in logs
    assert "timed out" not in logs
    assert _guard_marks(node) > before


def test_down_leaves_nothing(node: RealNode) -> None:
    cluster = node.cluster
    pids = {p.pid for p in cluster.server_processes}
    in_cgroups = cgroups.pids()
    assert in_cgroups, "the node's processes are in its cgroups"
    cluster.stop()
    assert cluster.node_leftovers == []
    for pid in pids | in_cgroups:
        assert not Path(f"/proc/{pid}").exists() or _zombie(pid), pid
    assert not any((h / layout.CGROUP_ROOT).exists() for h in cgroups.all_hierarchies())
    assert hostsnapshot.diff(node.before, hostsnapshot.snapshot(cluster.state_dir.parent)) == {}
    assert not (cluster.state_dir / "node").exists()


def _zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def _cli(*args: str) -> list[str]:
    return [str(Path(sys.executable).parent / "deployplane"), "dev", "cluster", *args]


def test_interrupted_up_is_cleaned_by_the_next_up(tmp_path: Path) -> None:
    before = hostsnapshot.snapshot(tmp_path)
    state = tmp_path / "state"
    first = subprocess.Popen(
        _cli("up", "--real-node", "--state-dir", str(state)),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    recorded = state / "state.json"
    deadline = time.monotonic() + 60
    while not recorded.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    first.send_signal(signal.SIGKILL)  # mid-start: the daemons run, the node is not Ready
    first.wait()
    again = subprocess.run(
        _cli("up", "--real-node", "--state-dir", str(state), "--timeout", "120"),
        capture_output=True,
        text=True,
        check=False,
    )
    assert again.returncode == 0, again.stdout + again.stderr
    down = subprocess.run(
        _cli("down", "--state-dir", str(state)), capture_output=True, text=True, check=False
    )
    assert down.returncode == 0, down.stdout + down.stderr
    assert cgroups.pids() == set()
    assert hostsnapshot.diff(before, hostsnapshot.snapshot(tmp_path)) == {}


_OWNER = """
import sys, time
from pathlib import Path
from kubernetes import client
from deployplane.devcluster import DevCluster
from deployplane.devcluster.realnode import images, node
sys.path.insert(0, {repo!r})
from tests.support.realnode import busybox_image, pod_manifest
cluster = DevCluster(Path({state!r}), real_node=True, nodes=0, ready_timeout=120).start()
holder = next(p for p in cluster.server_processes if p.name == node.HOLDER)
images.import_archives(holder.pid, cluster.tools.bin_dir / "ctr", [busybox_image(Path({image!r}))])
with cluster.admin() as api:
    core = client.CoreV1Api(api)
    core.create_namespaced_pod("default", pod_manifest("survivor", "default", ["sleep", "3600"]))
    while core.read_namespaced_pod("survivor", "default").status.phase != "Running":
        time.sleep(0.2)
print("running", flush=True)
time.sleep(3600)
"""


def test_node_of_a_killed_owner_is_cleaned_by_the_next_start(tmp_path: Path) -> None:
    """SIGKILL the Python process owning a node with a running pod: its daemons die with it
    (PR_SET_PDEATHSIG), its shim and container do not; the next start removes them."""
    before = hostsnapshot.snapshot(tmp_path)
    code = _OWNER.format(
        repo=str(Path(__file__).parents[2]),
        state=str(tmp_path / "a"),
        image=str(tmp_path / "b.tar"),
    )
    owner = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE)
    try:
        assert owner.stdout is not None
        assert owner.stdout.readline().strip() == b"running"
    finally:
        owner.kill()
        owner.wait()
    time.sleep(1)  # the kernel's death signals reach the daemons
    assert cgroups.orphaned(), "the pod's shim and container outlive their owner"
    with DevCluster(tmp_path / "c", real_node=True, nodes=0, ready_timeout=120):
        pass
    assert cgroups.pids() == set()
    assert hostsnapshot.diff(before, hostsnapshot.snapshot(tmp_path)) == {}
