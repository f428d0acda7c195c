"""On the real node (the tier's session), as a user would (issue 37 items 6 and 7): a
tiny two-node graph with one pure-Python dependency (`six`, listed in `langgraph.json`)
deployed by the vendor's own `langgraph deploy --remote` (langgraph-cli 0.4.40) to an
emulator that builds real images (`serve --build-images`, imported into the tier's
node) and runs listener-less deployments there (`--builtin-dataplane`); the graph run
through `deployplane deployments port-forward` with the vendor's SDK (`langgraph-sdk`,
`client.runs.wait`); a changed graph deployed again is a new revision that answers
with the new output while the old revision's pods go; a graph that does not import is
BUILD_FAILED with the reason in what the CLI prints. Then the operator path: an
AgentDeployment (`external_docker`, the only non-git source the CRD has) of the image
built here reaches Ready, `kubectl get agd` shows its URL, and the same server answers.

One emulator, one project, builds cached by content (a warm run rebuilds nothing).
Every wait is bounded only to stop a hang; the figures printed are measurements.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException
from langgraph_sdk import get_sync_client
from tests.support import langgraph_app, podsecurity, polling, realnode
from tests.support.operator_harness import (
    API_KEY,
    WORKSPACE,
    Emulator,
    Resources,
    kopf_operator,
    operator_env,
    ready_for_generation,
)

from deployplane.devcluster.realnode import images

NAMESPACE = "langgraph-e2e"
APP = "lg-e2e-app"
DEPLOYMENT_ID = "deployplane.io/deployment-id"
REVISION_ID = "deployplane.io/revision-id"
COMPONENT = "app.kubernetes.io/component"
AGD = "agentdeployments"


@pytest.fixture(scope="module")
def cloud(
    real_node_session: realnode.Session,
    kubeconfig: Path,
    k8s_api: client.ApiClient,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Emulator]:
    """The emulator building real images into the tier's node, its built-in data plane
    deploying into NAMESPACE, which enforces Pod Security `restricted`."""
    core = client.CoreV1Api(k8s_api)
    # The built images run where Pod Security `restricted` is enforced.
    meta = client.V1ObjectMeta(name=NAMESPACE, labels=podsecurity.RESTRICTED)
    core.create_namespace(client.V1Namespace(metadata=meta))
    podsecurity.enforces_restricted(k8s_api, NAMESPACE)
    state_dir = str(real_node_session.cluster.state_dir)
    emulator = Emulator(
        tmp_path_factory.mktemp("langgraph-cloud"),
        step_seconds=0.2,
        strict=False,
        proxied=False,
        args=("--builtin-dataplane", NAMESPACE),
        env={
            "KUBECONFIG": str(kubeconfig),
            "DEPLOYPLANE_POSTGRES_IMAGE": realnode.POSTGRES_IMAGE,
            "DEPLOYPLANE_REDIS_IMAGE": realnode.REDIS_IMAGE,
        },
        config={"image_builds": {"load_into_dev_cluster": state_dir}},
    ).start()
    try:
        yield emulator
    finally:
        emulator.stop()
        print("emulator log (tail):\n" + emulator.log_path.read_text()[-4000:])
        with contextlib.suppress(ApiException):
            core.delete_namespace(NAMESPACE)


def _deploy(
    cloud: Emulator, project: Path, name: str
) -> tuple[subprocess.CompletedProcess[str], float]:
    return langgraph_app.deploy(cloud.url, API_KEY, project, name)


def _api(cloud: Emulator) -> httpx.Client:
    headers = {"X-Api-Key": API_KEY, "X-Tenant-Id": WORKSPACE}
    return httpx.Client(base_url=cloud.url, headers=headers, timeout=30)


def _latest_revision(cloud: Emulator, deployment_id: str) -> dict[str, Any]:
    with _api(cloud) as api:
        current = api.get(f"/v2/deployments/{deployment_id}").json()
        path = f"/v2/deployments/{deployment_id}/revisions/{current['latest_revision_id']}"
        revision: dict[str, Any] = api.get(path).json()
    return revision


def _build_span(cloud: Emulator, deployment_id: str, revision_id: str) -> str:
    """The build's own time, first to last build log line (a measurement, printed)."""
    path = f"/v1/projects/{deployment_id}/revisions/{revision_id}/build_logs"
    with _api(cloud) as api:
        logs = api.post(path, json={"order": "asc", "limit": 1000}).json()["logs"]
    span = (logs[-1]["timestamp"] - logs[0]["timestamp"]) / 1000
    cached = any("(cached)" in line["message"] for line in logs)
    return f"build {span:.1f} s{' (cached)' if cached else ''}"


def _server_pods(k8s_api: client.ApiClient, deployment_id: str) -> list[Any]:
    selector = f"{DEPLOYMENT_ID}={deployment_id},{COMPONENT}=agent-server"
    core = client.CoreV1Api(k8s_api)
    return list(core.list_namespaced_pod(NAMESPACE, label_selector=selector).items)


def _pod_revisions(k8s_api: client.ApiClient, deployment_id: str) -> set[str]:
    return {p.metadata.annotations[REVISION_ID] for p in _server_pods(k8s_api, deployment_id)}


def _deployed(cloud: Emulator, done: subprocess.CompletedProcess[str]) -> None:
    """`langgraph deploy` succeeded; else the failure says why the revision failed (the
    CLI prints only "Deployment failed")."""
    if done.returncode == 0:
        return
    why = ""
    with contextlib.suppress(AssertionError, KeyError, httpx.HTTPError):
        revision = _latest_revision(cloud, langgraph_app.deployment_id(done.stdout))
        why = f"revision {revision['status']}: {revision.get('status_message')}\n"
    raise AssertionError(why + done.stdout + done.stderr)


def _port_forward(
    cloud: Emulator, ref: str, kubeconfig: Path
) -> contextlib.AbstractContextManager[str]:
    return langgraph_app.port_forward(cloud.url, API_KEY, ref, kubeconfig)


def test_langgraph_deploy_builds_runs_the_graph_and_redeploys_a_new_revision(
    cloud: Emulator, k8s_api: client.ApiClient, kubeconfig: Path, tmp_path: Path
) -> None:
    project = langgraph_app.write_project(tmp_path / "app", "!", "second")
    done, upload_to_deployed = _deploy(cloud, project, APP)
    _deployed(cloud, done)
    assert "Deployment successful!" in done.stdout
    dep = langgraph_app.deployment_id(done.stdout)
    first = _latest_revision(cloud, dep)
    assert first["status"] == "DEPLOYED"
    image = first["source_revision_config"]["image_uri"]
    assert image.startswith("localhost/deployplane-agent:"), image
    built = _build_span(cloud, dep, first["id"])
    print(f"langgraph deploy -> DEPLOYED {upload_to_deployed:.1f} s ({built})")
    # Only this revision's server pods: those of a revision `app_image` deployed before
    # (the shuffled order may run it first) go gracefully, bounded only to stop a hang.
    polling.wait_until(
        "only the first revision's server pods",
        lambda: _pod_revisions(k8s_api, dep) == {first["id"]},
        120,
        interval=0.5,
    )
    with _port_forward(cloud, APP, kubeconfig) as url:
        assert httpx.get(f"{url}/ok", timeout=30).json()["ok"] is True
        output, first_wait = langgraph_app.run_graph(url, "hi")
        assert output == {"text": "HI!", "steps": ["first", "second"]}
        print(f"first runs.wait through port-forward {first_wait:.2f} s")

    # A changed graph: a new revision (a new image), its output the new one.
    langgraph_app.write_project(project, "?", "second-v2")
    again, redeploy = _deploy(cloud, project, APP)
    assert again.returncode == 0, again.stdout + again.stderr
    second = _latest_revision(cloud, dep)
    built = _build_span(cloud, dep, second["id"])
    print(f"second langgraph deploy -> DEPLOYED {redeploy:.1f} s ({built})")
    assert second["id"] != first["id"]
    assert second["status"] == "DEPLOYED"
    assert second["source_revision_config"]["image_uri"] != image
    # The old revision's pods go (gracefully: bounded only to stop a hang).
    polling.wait_until(
        "only the new revision's server pods",
        lambda: _pod_revisions(k8s_api, dep) == {second["id"]},
        120,
        interval=0.5,
    )
    with _port_forward(cloud, APP, kubeconfig) as url:
        output, _ = langgraph_app.run_graph(url, "hi")
        assert output == {"text": "HI?", "steps": ["first", "second-v2"]}


def test_a_graph_that_does_not_import_is_build_failed_in_what_the_cli_prints(
    cloud: Emulator, tmp_path: Path
) -> None:
    broken = langgraph_app.write_project(tmp_path / "broken", "!", "second")
    (broken / "agent.py").write_text("import not_a_module_e2e\ngraph = None\n")
    failed, _ = _deploy(cloud, broken, "lg-e2e-broken")
    assert failed.returncode == 1, failed.stdout + failed.stderr
    assert "Deployment failed" in failed.stdout
    reason = (
        "graph 'agent' does not import: ModuleNotFoundError: No module named 'not_a_module_e2e'"
    )
    assert f"| Build failed: {reason}" in failed.stdout, failed.stdout


@pytest.fixture
def app_image(cloud: Emulator, tmp_path: Path) -> str:
    """The image of APP's latest revision: the changed graph the first test ends with
    (`?`, second-v2), deployed here when that test has not run yet (the tests run in a
    shuffled order; builds are cached by content, so the second of the two builds nothing)."""
    if not cloud.deployments_named(APP):
        done, _ = _deploy(
            cloud, langgraph_app.write_project(tmp_path / "app", "?", "second-v2"), APP
        )
        _deployed(cloud, done)
    (built,) = cloud.deployments_named(APP)
    image: str = built["source_revision_config"]["image_uri"]
    return image


def test_an_agentdeployment_of_the_built_image_is_ready_with_its_url_and_serves(
    cloud: Emulator,
    resources: Resources,
    namespace: str,
    kubeconfig: Path,
    real_node_session: realnode.Session,
    app_image: str,
) -> None:
    image = app_image
    body = {
        "apiVersion": "deployplane.io/v1alpha1",
        "kind": "AgentDeployment",
        "metadata": {"name": "lg-operator"},
        "spec": {
            "source": "external_docker",
            "sourceConfig": {"resourceSpec": {"minScale": 1}},
            "sourceRevisionConfig": {"imageUri": image},
        },
    }
    with kopf_operator(namespace, operator_env(cloud, kubeconfig)) as runner:
        started = time.monotonic()
        resources.create(AGD, body)
        obj = resources.wait(AGD, "lg-operator", ready_for_generation, within=400, what="Ready")
        took = time.monotonic() - started
        assert obj is not None
        url = obj["status"]["url"]
        assert url.startswith("https://"), url
        assert obj["status"]["revision"]["status"] == "DEPLOYED"
        table = _kubectl(real_node_session, "get", "agd", "-n", namespace, "lg-operator")
        header, row = table.splitlines()[:2]
        assert "URL" in header.split()
        assert url in row.split()
        with _port_forward(cloud, "lg-operator", kubeconfig) as local:
            assert httpx.get(f"{local}/ok", timeout=30).json()["ok"] is True
            output, _ = langgraph_app.run_graph(local, "op")
            assert output == {"text": "OP?", "steps": ["first", "second-v2"]}
        resources.delete(AGD, "lg-operator")
        resources.wait(AGD, "lg-operator", lambda o: o is None, within=120, what="deleted")
    # (printed here: KopfRunner captures the test's stdout while it runs)
    print(f"AgentDeployment (external_docker, the built image) -> Ready {took:.1f} s")
    assert runner.exit_code == 0, runner.output[-3000:]
    assert API_KEY not in runner.output


def _kubectl(session: realnode.Session, *args: str) -> str:
    kubectl = session.cluster.tools.kubectl
    assert kubectl is not None
    done = subprocess.run(
        [str(kubectl), f"--kubeconfig={session.cluster.kubeconfig}", *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


THREADS_APP = "lg-e2e-threads"
THREADS_META = {"e2e": "threads"}
STORE_ITEM = (["e2e", "threads"], "prefs")


def _ready_server_pod(k8s_api: client.ApiClient, deployment_id: str, revision: str) -> Any:
    """The one Ready agent-server pod of `revision` (None while there is none, or more)."""
    pods = _server_pods(k8s_api, deployment_id)
    ready = [
        p
        for p in pods
        if p.metadata.annotations[REVISION_ID] == revision
        and p.metadata.deletion_timestamp is None
        and any(c.type == "Ready" and c.status == "True" for c in p.status.conditions or [])
    ]
    return ready[0] if len(ready) == len(pods) == 1 else None


def _until_served_again(
    k8s_api: client.ApiClient, deployment_id: str, revision: str, not_pod: str | None
) -> str:
    pod = polling.wait_until(
        "one Ready server pod again",
        lambda: (
            p
            if (p := _ready_server_pod(k8s_api, deployment_id, revision)) is not None
            and p.metadata.name != not_pod
            else None
        ),
        300,
        interval=0.5,
    )
    return str(pod.metadata.name)


KILLED_META = {"e2e": "kill -9"}


def _written(ops: Path) -> tuple[int, int]:
    """The runtime's file's (inode, mtime): the runtime writes a temporary file and
    renames it over the old one, so each write changes both."""
    now = os.stat(ops)
    return now.st_ino, now.st_mtime_ns


def _rewritten(ops: Path, after: tuple[int, int]) -> tuple[int, int] | None:
    seen = _written(ops)
    return seen if seen != after else None


def _next_write(ops: Path, after: tuple[int, int]) -> tuple[tuple[int, int], float]:
    seen = polling.wait_until("the runtime's next write", lambda: _rewritten(ops, after), 60, 0.02)
    return seen, time.monotonic()


def _server_process(session: realnode.Session, container_id: str) -> int:
    """The agent server's process, found from the node: its containerd task's pid (the
    node shares the host's pid namespace), checked to be the server by its command line."""
    ctr = session.cluster.tools.bin_dir / "ctr"
    argv = images.ctr_argv(session.holder_pid(), ctr, "tasks", "ls")
    listed = subprocess.run(argv, capture_output=True, text=True, timeout=30, check=True).stdout
    (pid,) = [int(line.split()[1]) for line in listed.splitlines() if line.startswith(container_id)]
    command = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    assert b"/usr/local/bin/deployplane-agent-server" in command, command
    return pid


def _kill_9_keeps_what_the_runtime_wrote(
    session: realnode.Session,
    k8s_api: client.ApiClient,
    cloud: Emulator,
    kubeconfig: Path,
    directory: Path,
    serving: tuple[str, str, str],
) -> None:
    """The server's process killed -9 from the node: nothing runs at its end, so only
    what the runtime's periodic write had put in the claim survives. A thread written
    right after one write is in the files at the next one (the window); killed right
    after that, the server comes back (the kubelet restarts the container) with it. A
    thread written just before the kill missed every write: lost, as documented
    (docs/dataplane.md, "What survives what"), so only printed."""
    dep, revision, pod = serving
    ops = directory / ".langgraph_ops.pckl"
    core = client.CoreV1Api(k8s_api)
    (before,) = core.read_namespaced_pod(pod, NAMESPACE).status.container_statuses
    marker = uuid.uuid4().hex
    with _port_forward(cloud, THREADS_APP, kubeconfig) as url:
        sdk = get_sync_client(url=url, api_key=None)
        first, first_at = _next_write(ops, _written(ops))
        kept = sdk.threads.create(metadata={**KILLED_META, "marker": marker})["thread_id"]
        written = time.monotonic()
        second, second_at = _next_write(ops, first)
        while marker.encode() not in ops.read_bytes():  # a write already under way
            second, second_at = _next_write(ops, second)
        late = sdk.threads.create(metadata={**KILLED_META, "marker": "late"})["thread_id"]
        os.kill(_server_process(session, before.container_id.split("://", 1)[1]), signal.SIGKILL)
        killed = time.monotonic()
    print(
        f"the runtime's writes {second_at - first_at:.2f} s apart; the thread in its files "
        f"{second_at - written:.2f} s after it was written, killed -9 {killed - written:.2f} s "
        "after it was written"
    )

    def restarted() -> Any:
        (status,) = core.read_namespaced_pod(pod, NAMESPACE).status.container_statuses
        return status.restart_count > before.restart_count and status.ready and status

    after = polling.wait_until("the kubelet to restart the agent server", restarted, 300, 0.5)
    assert after.last_state.terminated.exit_code == 137  # SIGKILL: no final write
    assert _ready_server_pod(k8s_api, dep, revision).metadata.name == pod
    print(f"kill -9 -> a Ready server again {time.monotonic() - killed:.1f} s")
    with _port_forward(cloud, THREADS_APP, kubeconfig) as url:
        sdk = get_sync_client(url=url, api_key=None)
        metadata = sdk.threads.get(kept)["metadata"]
        assert metadata is not None
        assert metadata["marker"] == marker, metadata
        found = {t["thread_id"] for t in sdk.threads.search(metadata=KILLED_META)}
    print(
        f"kill -9: the thread written before the last write kept; the late one kept: "
        f"{late in found}"
    )


@pytest.mark.timeout(900)  # four rollouts of a real server, three of them deploys
def test_threads_runs_and_the_store_survive_restarts_and_redeploys(
    cloud: Emulator,
    k8s_api: client.ApiClient,
    kubeconfig: Path,
    tmp_path: Path,
    real_node_session: realnode.Session,
) -> None:
    """As a user would: a thread run twice and a store item, then the server's pod
    deleted, a new revision of the same graph, `kubectl rollout restart`, the server's
    process killed -9: after each the thread's state, the search and the store item are
    as they were. The claim is a
    directory under the node's state. Then a graph whose state class moved: the server
    discards its saved threads, and `langgraph deploy logs` shows the warning."""
    project = langgraph_app.write_threads_project(tmp_path / "threads", "notes")
    done, took = _deploy(cloud, project, THREADS_APP)
    _deployed(cloud, done)
    dep = langgraph_app.deployment_id(done.stdout)
    revision = _latest_revision(cloud, dep)["id"]
    print(f"threads app: langgraph deploy -> DEPLOYED {took:.1f} s")
    pod = _until_served_again(k8s_api, dep, revision, None)
    with _port_forward(cloud, THREADS_APP, kubeconfig) as url:
        sdk = get_sync_client(url=url, api_key=None)
        thread = sdk.threads.create(metadata=THREADS_META)["thread_id"]
        for text in ("hello", "again"):
            sdk.runs.wait(thread, "agent", input={"text": text})
        sdk.store.put_item(*STORE_ITEM, {"theme": "dark"})
        saved = sdk.threads.get_state(thread)["values"]
    notes = [{"text": "hello"}, {"text": "again"}]
    assert saved == {"text": "again", "count": 2, "notes": notes}

    def survived(after: str) -> None:
        started = time.monotonic()
        with _port_forward(cloud, THREADS_APP, kubeconfig) as url:
            forwarding = time.monotonic() - started
            sdk = get_sync_client(url=url, api_key=None)
            assert sdk.threads.get_state(thread)["values"] == saved, after
            found = sdk.threads.search(metadata=THREADS_META)
            assert [t["thread_id"] for t in found] == [thread], after
            item = sdk.store.get_item(*STORE_ITEM)
            assert item is not None, after
            assert item["value"] == {"theme": "dark"}, after
            asked = time.monotonic() - started - forwarding
        print(
            f"{after}: the thread, its search and the store item as they were "
            f"(port-forward {forwarding:.1f} s, the three calls {asked:.1f} s)"
        )

    # (a) the server's pod deleted: its replacement loads what the old one wrote at its stop
    started = time.monotonic()
    client.CoreV1Api(k8s_api).delete_namespaced_pod(pod, NAMESPACE)
    pod = _until_served_again(k8s_api, dep, revision, pod)
    print(f"pod deleted -> a Ready server again {time.monotonic() - started:.1f} s")
    survived("pod deleted")

    # (b) a new revision of the same graph
    again, took = _deploy(cloud, project, THREADS_APP)
    assert again.returncode == 0, again.stdout + again.stderr
    second = _latest_revision(cloud, dep)["id"]
    assert second != revision
    pod = _until_served_again(k8s_api, dep, second, pod)
    print(f"same graph, new revision -> DEPLOYED {took:.1f} s")
    survived("new revision")

    # (c) kubectl rollout restart
    selector = f"{DEPLOYMENT_ID}={dep},{COMPONENT}=agent-server"
    (found,) = (
        client.AppsV1Api(k8s_api)
        .list_namespaced_deployment(NAMESPACE, label_selector=selector)
        .items
    )
    server = found.metadata.name
    started = time.monotonic()
    _kubectl(real_node_session, "rollout", "restart", f"deployment/{server}", "-n", NAMESPACE)
    _kubectl(
        real_node_session,
        "rollout",
        "status",
        f"deployment/{server}",
        "-n",
        NAMESPACE,
        "--timeout=300s",
    )
    pod = _until_served_again(k8s_api, dep, second, pod)
    print(f"rollout restart -> a Ready server again {time.monotonic() - started:.1f} s")
    survived("rollout restart")

    # The claim: bound by the node's local-path provisioner to a directory of the node's state.
    core = client.CoreV1Api(k8s_api)
    claim: Any = core.read_namespaced_persistent_volume_claim(f"{server}-state", NAMESPACE)
    assert claim.status.phase == "Bound"
    assert claim.spec.storage_class_name == "local-path"
    volume: Any = core.read_persistent_volume(claim.spec.volume_name)
    on_node = Path(volume.spec.host_path.path)
    assert on_node.is_relative_to("/var/lib/local-path-provisioner"), on_node
    directory = (
        real_node_session.cluster.state_dir / "node" / "var-lib" / on_node.relative_to("/var/lib")
    )
    assert (directory / ".langgraph_ops.pckl").is_file(), sorted(directory.iterdir())
    files = sum(f.stat().st_size for f in directory.iterdir())
    print(f"the claim's files after one thread: {files} bytes")

    # (d) kill -9 of the server's process: no final write
    _kill_9_keeps_what_the_runtime_wrote(
        real_node_session, k8s_api, cloud, kubeconfig, directory, (dep, second, pod)
    )
    survived("kill -9")

    # A graph whose state class moved (notes.Note -> memos.Note): the saved threads
    # cannot be loaded, the server deletes them, and the deploy logs say so.
    langgraph_app.write_threads_project(project, "memos")
    moved, _ = _deploy(cloud, project, THREADS_APP)
    assert moved.returncode == 0, moved.stdout + moved.stderr
    logs = langgraph_app.langgraph(
        cloud.url, API_KEY, project, "deploy", "logs", "--name", THREADS_APP, "--level", "WARNING"
    )
    assert logs.returncode == 0, logs.stdout + logs.stderr
    warning = (
        "[WARNING] the server could not load its saved threads, runs, assistants and crons "
        "and deleted them"
    )
    assert warning in logs.stdout, logs.stdout
    assert "Unable to load cached data" in logs.stdout
    with _port_forward(cloud, THREADS_APP, kubeconfig) as url:
        sdk = get_sync_client(url=url, api_key=None)
        assert sdk.threads.search(metadata=THREADS_META) == []
        item = sdk.store.get_item(*STORE_ITEM)
        assert item is not None  # the store keeps plain values: it loads
        assert item["value"] == {"theme": "dark"}

    # Deleted with the deployment: the claim, its volume and the node's directory.
    with _api(cloud) as api:
        assert api.delete(f"/v2/deployments/{dep}").status_code in (202, 204)
    polling.wait_until(
        "the claim's directory removed", lambda: not directory.exists() or None, 300, interval=1
    )
    assert not core.list_namespaced_persistent_volume_claim(
        NAMESPACE, label_selector=f"{DEPLOYMENT_ID}={dep}"
    ).items
