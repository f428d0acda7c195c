"""On the real node (the tier's session): DEPLOYED is the server's own `/ok`, a server
that crashes at start is DEPLOY_FAILED with its last log lines, the emulator's built-in
data plane runs the deployments that have no listener (`langgraph deploy`'s), and
`deployplane deployments port-forward` reaches the server from the host (issue 37
items 3-5).

The server stand-ins are busybox images written here (no daemon, no registry): one
whose `/ok` answers only once the test writes it (`kubectl exec`), one that prints a
traceback and exits. Deployments are made through the published API, with no listener:
the emulator (`serve --builtin-dataplane`) runs them in this module's namespace.
Every wait is bounded only to stop a hang; the figures printed are measurements.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException
from tests.support import polling, realnode
from tests.support.operator_harness import API_KEY, WORKSPACE, Emulator

from deployplane.devcluster.realnode import images, ociarchive

NAMESPACE = "cloud-e2e"
GATED_IMAGE = "localhost/deployplane-test/gated-server:1"
CRASH_IMAGE = "localhost/deployplane-test/crash-on-start:1"
CRASH_LAST_LINE = "ModuleNotFoundError: No module named 'my_graph'"
COMPONENT = "app.kubernetes.io/component"
DEPLOYMENT_ID = "deployplane.io/deployment-id"
NOBODY = 65534


def _busybox(ref: str, script: str, path: Path) -> Path:
    """A user's image as restricted wants it: a numeric non-root USER, and /tmp to write."""
    files = [ociarchive.ImageFile("bin/busybox", realnode.BUSYBOX.read_bytes())]
    files += [ociarchive.ImageFile(f"bin/{a}", symlink="busybox") for a in realnode.APPLETS]
    files += [ociarchive.ImageFile("tmp", mode=0o1777, directory=True)]
    spec = ociarchive.ImageSpec(
        ref=ref, files=files, cmd=["sh", "-c", script], user=f"{NOBODY}:{NOBODY}"
    )
    return ociarchive.write_image(spec, path)


@pytest.fixture(scope="module")
def server_images(
    real_node_session: realnode.Session, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """The two stand-ins, imported into the node's containerd."""
    where = tmp_path_factory.mktemp("server-images")
    gated = _busybox(
        GATED_IMAGE, "mkdir -p /tmp/www && exec httpd -f -p 8000 -h /tmp/www", where / "g.tar"
    )
    crash = _busybox(
        CRASH_IMAGE,
        "echo 'Starting the agent server'; echo 'Traceback (most recent call last):'; "
        f'echo "{CRASH_LAST_LINE}"; exit 1',
        where / "c.tar",
    )
    ctr = real_node_session.cluster.tools.bin_dir / "ctr"
    images.import_archives(real_node_session.holder_pid(), ctr, [gated, crash])


@pytest.fixture(scope="module")
def cloud(
    real_node_session: realnode.Session,
    kubeconfig: Path,
    k8s_api: client.ApiClient,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Emulator]:
    """The emulator with its built-in data plane deploying into NAMESPACE."""
    core = client.CoreV1Api(k8s_api)
    core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=NAMESPACE)))
    emulator = Emulator(
        tmp_path_factory.mktemp("cloud"),
        step_seconds=0.2,
        strict=False,
        proxied=False,
        args=("--builtin-dataplane", NAMESPACE),
        env={
            "KUBECONFIG": str(kubeconfig),
            "DEPLOYPLANE_POSTGRES_IMAGE": realnode.POSTGRES_IMAGE,
            "DEPLOYPLANE_REDIS_IMAGE": realnode.REDIS_IMAGE,
        },
    ).start()
    try:
        yield emulator
    finally:
        emulator.stop()
        print("emulator log (tail):\n" + emulator.log_path.read_text()[-4000:])
        with contextlib.suppress(ApiException):
            core.delete_namespace(NAMESPACE)


def _api(emulator: Emulator) -> httpx.Client:
    headers = {"X-Api-Key": API_KEY, "X-Tenant-Id": WORKSPACE}
    return httpx.Client(base_url=emulator.url, headers=headers, timeout=30)


def _create(emulator: Emulator, name: str, image: str) -> dict[str, Any]:
    body = {
        "name": name,
        "source": "external_docker",
        "source_config": {"resource_spec": {"min_scale": 1}},
        "source_revision_config": {"image_uri": image},
    }
    with _api(emulator) as api:
        response = api.post("/v2/deployments", json=body)
    assert response.status_code == 201, response.text
    created: dict[str, Any] = response.json()
    return created


def _revision_status(emulator: Emulator, deployment: dict[str, Any]) -> str:
    with _api(emulator) as api:
        current = api.get(f"/v2/deployments/{deployment['id']}").json()
        path = f"/v2/deployments/{deployment['id']}/revisions/{current['latest_revision_id']}"
        return str(api.get(path).json()["status"])


def _pods(k8s_api: client.ApiClient, deployment: dict[str, Any], component: str) -> list[Any]:
    selector = f"{DEPLOYMENT_ID}={deployment['id']},{COMPONENT}={component}"
    core = client.CoreV1Api(k8s_api)
    return list(core.list_namespaced_pod(NAMESPACE, label_selector=selector).items)


def _running_not_ready(pod: Any) -> bool:
    statuses = pod.status.container_statuses or []
    return bool(statuses) and all(s.state.running and not s.ready for s in statuses)


def _kubectl(cluster: realnode.Session, *args: str) -> str:
    kubectl = cluster.cluster.tools.kubectl
    assert kubectl is not None
    done = subprocess.run(
        [str(kubectl), f"--kubeconfig={cluster.cluster.kubeconfig}", *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_deployed_only_once_the_server_answers_ok_then_port_forward_reaches_it(
    cloud: Emulator,
    server_images: None,
    k8s_api: client.ApiClient,
    real_node_session: realnode.Session,
    kubeconfig: Path,
) -> None:
    started = time.monotonic()
    deployment = _create(cloud, "gated", GATED_IMAGE)
    # The server (and the queue worker: same image) runs, but /ok does not answer yet.
    servers = polling.wait_until(
        "the agent-server pod to run, not Ready",
        lambda: [p for p in _pods(k8s_api, deployment, "agent-server") if _running_not_ready(p)],
        240,
        interval=0.5,
    )
    assert _revision_status(cloud, deployment) == "DEPLOYING"
    queue = polling.wait_until(
        "the queue pod to run",
        lambda: [p for p in _pods(k8s_api, deployment, "queue") if _running_not_ready(p)],
        120,
        interval=0.5,
    )
    assert _revision_status(cloud, deployment) == "DEPLOYING"
    answered = time.monotonic()
    for pod in [*servers, *queue]:
        _kubectl(real_node_session, "exec", "-n", NAMESPACE, pod.metadata.name, "--",
                 "sh", "-c", "echo ok > /tmp/www/ok")  # fmt: skip
    polling.wait_until(
        "DEPLOYED", lambda: _revision_status(cloud, deployment) == "DEPLOYED", 240, interval=0.5
    )
    deployed = time.monotonic()
    print(f"create -> DEPLOYED {deployed - started:.1f} s")
    print(f"/ok answering -> DEPLOYED {deployed - answered:.1f} s")
    (server,) = _pods(k8s_api, deployment, "agent-server")
    assert all(s.ready for s in server.status.container_statuses)
    labels = server.metadata.labels
    assert labels["deployplane.io/listener-id"] not in ("", None)  # the built-in listener's
    _port_forward_reaches_ok(cloud, deployment, kubeconfig)


def _port_forward_reaches_ok(cloud: Emulator, deployment: dict[str, Any], kubeconfig: Path) -> None:
    port = _free_port()
    argv = [sys.executable, "-m", "deployplane.cli", "deployments", "port-forward",
            deployment["name"], str(port), "--url", cloud.url,
            "--kubeconfig", str(kubeconfig)]  # fmt: skip
    process = subprocess.Popen(
        argv,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "DEPLOYPLANE_API_KEY": API_KEY},
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        assert line.startswith(f"forwarding http://127.0.0.1:{port} -> deployment gated"), line + (
            process.stderr.read() if process.poll() is not None and process.stderr else ""
        )
        answer = httpx.get(f"http://127.0.0.1:{port}/ok", timeout=30)
        assert answer.status_code == 200
        assert answer.text.strip() == "ok"
        with pytest.raises(httpx.ConnectError):  # on 127.0.0.1 only
            httpx.get(f"http://{_other_address()}:{port}/ok", timeout=5)
    finally:
        process.send_signal(signal.SIGINT)
        code = process.wait(30)
    assert code == 0, process.stderr.read() if process.stderr else ""


def _other_address() -> str:
    """This host's address towards the real node (its veth): not loopback, so a port
    bound to 127.0.0.1 only refuses connections there."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.connect(("198.18.0.2", 9))  # a UDP connect only picks the route: nothing sent
        address = str(sock.getsockname()[0])
    assert not address.startswith("127."), address
    return address


def test_a_server_crashing_at_start_is_deploy_failed_with_its_last_log_lines(
    cloud: Emulator, server_images: None
) -> None:
    started = time.monotonic()
    deployment = _create(cloud, "crashing", CRASH_IMAGE)
    polling.wait_until(
        "DEPLOY_FAILED",
        lambda: _revision_status(cloud, deployment) == "DEPLOY_FAILED",
        300,
        interval=0.5,
    )
    print(f"create -> DEPLOY_FAILED {time.monotonic() - started:.1f} s")
    with _api(cloud) as api:
        current = api.get(f"/v2/deployments/{deployment['id']}").json()
        path = f"/v1/projects/{deployment['id']}/revisions/{current['latest_revision_id']}"
        logs = api.post(f"{path}/deploy_logs", json={"order": "asc"}).json()["logs"]
    messages = [line["message"] for line in logs]
    assert any("CrashLoopBackOff: container agent-server crashed at start" in m for m in messages)
    # what `langgraph deploy` prints last: the server's own last words
    assert messages[-1] == f"agent-server log: {CRASH_LAST_LINE}", messages
    assert "agent-server log: Traceback (most recent call last):" in messages
