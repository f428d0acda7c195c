"""The operator's Kubernetes side under production faults, on a real kube-apiserver
(through `tests/support/apiproxy.py` where a fault is needed): credentials that expire
while it runs, 429 with Retry-After, watches closed at once, a watch gap hiding a
same-name re-create, a status wiped by hand, another controller's finalizer.

The operator runs in this process (`kopf run -m deployplane.controller.handlers`, as
Kopf users run it), logged in as a ServiceAccount through a kubeconfig whose exec
plugin prints whatever token the test put in a file.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import itertools
import json
import os
import signal
import socket
import stat
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from kubernetes import client
from tests.support.apiproxy import ApiServerProxy
from tests.support.e2ecluster import E2ECluster
from tests.support.operator_harness import (
    REPO,
    Emulator,
    OperatorProcess,
    Resources,
    condition,
    kopf_operator,
    operator_env,
    ready_for_generation,
)

from deployplane.devcluster.manifests import Applier
from deployplane.reconcile.finalizer import FINALIZER

AGD = "agentdeployments"
OPERATOR_SA = "operator"


@pytest.fixture
def proxy(dev_cluster: E2ECluster) -> Iterator[ApiServerProxy]:
    p = ApiServerProxy(dev_cluster.server, ca_file_of(dev_cluster)).start()
    yield p
    p.stop()


def ca_file_of(cluster: E2ECluster) -> str:
    """The apiserver's CA, as the admin kubeconfig names it (a file the client writes
    when the kubeconfig embeds it)."""
    with contextlib.closing(cluster.api_client()) as api:
        return str(api.configuration.ssl_ca_cert)


class Tokens:
    """The operator's ServiceAccount, and tokens bound to a Secret each: deleting the
    Secret makes its token invalid at once (the apiserver checks the bound object)."""

    def __init__(self, api: client.ApiClient, namespace: str, path: Path) -> None:
        self.core = client.CoreV1Api(api)
        self.namespace, self.path = namespace, path
        self.secrets: list[str] = []

    def rotate(self) -> str:
        """A new token in the file; the previous one revoked."""
        name = f"token-{len(self.secrets)}"
        secret = self.core.create_namespaced_secret(
            self.namespace, client.V1Secret(metadata=client.V1ObjectMeta(name=name))
        )
        spec = client.V1TokenRequestSpec(
            audiences=[],
            expiration_seconds=3600,
            bound_object_ref=client.V1BoundObjectReference(
                api_version="v1", kind="Secret", name=name, uid=secret.metadata.uid
            ),
        )
        issued = self.core.create_namespaced_service_account_token(
            OPERATOR_SA, self.namespace, client.AuthenticationV1TokenRequest(spec=spec)
        )
        self.path.write_text(issued.status.token)
        if self.secrets:
            self.core.delete_namespaced_secret(self.secrets[-1], self.namespace)
        self.secrets.append(name)
        return str(issued.status.token)


@pytest.fixture
def tokens(
    k8s_api: client.ApiClient, namespace: str, applier: Applier, tmp_path: Path
) -> Iterator[Tokens]:
    rbac = "rbac.authorization.k8s.io/v1"
    binding = f"{namespace}-operator"
    applier.apply(
        [
            {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": OPERATOR_SA}},
            {
                "apiVersion": rbac,
                "kind": "ClusterRoleBinding",
                "metadata": {"name": binding},
                "roleRef": {
                    "apiGroup": "rbac.authorization.k8s.io",
                    "kind": "ClusterRole",
                    "name": "cluster-admin",
                },
                "subjects": [
                    {"kind": "ServiceAccount", "name": OPERATOR_SA, "namespace": namespace}
                ],
            },
        ],
        namespace=namespace,
    )
    t = Tokens(k8s_api, namespace, tmp_path / "token")
    t.rotate()
    # RBAC reads bindings from an informer: wait until the token is authorized.
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if _authorized(k8s_api, namespace):
            break
        time.sleep(0.2)
    yield t
    client.RbacAuthorizationV1Api(k8s_api).delete_cluster_role_binding(binding)


def _authorized(api: client.ApiClient, namespace: str) -> bool:
    review = client.V1SubjectAccessReview(
        spec=client.V1SubjectAccessReviewSpec(
            user=f"system:serviceaccount:{namespace}:{OPERATOR_SA}",
            resource_attributes=client.V1ResourceAttributes(
                group="deployplane.io", resource=AGD, verb="watch"
            ),
        )
    )
    answer = client.AuthorizationV1Api(api).create_subject_access_review(review)
    return bool(answer.status.allowed)


def exec_kubeconfig(tmp_path: Path, server: str, token_file: Path) -> Path:
    """A kubeconfig whose credentials come from an exec plugin (as on EKS/GKE): a
    script printing an ExecCredential with the token in `token_file` now."""
    plugin = tmp_path / "token-plugin.sh"
    plugin.write_text(
        "#!/bin/sh\n"
        'printf \'{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential",'
        f'"status":{{"token":"%s"}}}}\' "$(cat {token_file})"\n'
    )
    plugin.chmod(plugin.stat().st_mode | stat.S_IEXEC)
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "dev", "cluster": {"server": server}}],
        "users": [
            {
                "name": "operator",
                "user": {
                    "exec": {
                        "apiVersion": "client.authentication.k8s.io/v1",
                        "command": str(plugin),
                        "interactiveMode": "Never",
                    }
                },
            }
        ],
        "contexts": [{"name": "dev", "context": {"cluster": "dev", "user": "operator"}}],
        "current-context": "dev",
    }
    path = tmp_path / "operator.kubeconfig"
    path.write_text(yaml.safe_dump(config))
    return path


def docker(name: str, image: str = "registry.example.com/agent:1") -> dict[str, Any]:
    return {
        "apiVersion": "deployplane.io/v1alpha1",
        "kind": "AgentDeployment",
        "metadata": {"name": name},
        "spec": {
            "source": "external_docker",
            "sourceConfig": {"resourceSpec": {"minScale": 1}},
            "sourceRevisionConfig": {"imageUri": image},
        },
    }


@pytest.fixture
def operator_kubeconfig(tmp_path: Path, proxy: ApiServerProxy, tokens: Tokens) -> Path:
    return exec_kubeconfig(tmp_path, proxy.url, tokens.path)


def test_a_token_expiring_while_the_operator_runs_is_replaced_without_a_restart(
    resources: Resources,
    emulator: Emulator,
    operator_kubeconfig: Path,
    namespace: str,
    proxy: ApiServerProxy,
    tokens: Tokens,
    dev_cluster: E2ECluster,
) -> None:
    with kopf_operator(namespace, operator_env(emulator, operator_kubeconfig)) as runner:
        resources.create(AGD, docker("before"))
        resources.wait(AGD, "before", ready_for_generation, what="Ready")
        revoked = tokens.path.read_text()
        tokens.rotate()  # the token in use is revoked: every request with it is a 401
        wait_refused(dev_cluster, revoked)
        proxy.cut_watches()  # and the watch must reconnect (Kopf logs in again)
        resources.create(AGD, docker("after"))
        resources.patch(AGD, "before", {"spec": {"sourceRevisionConfig": {"imageUri": "r/a:2"}}})
        resources.wait(AGD, "after", ready_for_generation, what="Ready after the rotation")
        resources.wait(AGD, "before", ready_for_generation, what="generation 2 Ready")
    assert runner.exit_code == 0, runner.output[-3000:]
    refused = [a for a in proxy.arrivals if a[4] == 401]
    assert refused, "the revoked token was used and refused: the test tested something"


def wait_refused(dev_cluster: E2ECluster, token: str) -> None:
    """The apiserver caches a token's successful authentication for 10 s: wait until
    the revoked one is refused."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        with contextlib.closing(dev_cluster.api_client(token=token)) as api:
            try:
                client.VersionApi(api).get_code()
                client.CoreV1Api(api).list_namespace(limit=1)
            except client.ApiException as exc:
                if exc.status == 401:
                    return
        time.sleep(0.5)
    raise AssertionError("the revoked token is still accepted")


def _probe(url: str) -> int | None:
    """The status a probe gets within the kubelet's timeout (None: no answer)."""
    try:
        return httpx.get(url, timeout=2).status_code
    except httpx.HTTPError:
        return None


def _wait_status(url: str, status: int, within: float) -> str:
    """The body of `url` once it answers `status`; the last answer in the failure."""
    deadline, last = time.monotonic() + within, ""
    while time.monotonic() < deadline:
        try:
            got = httpx.get(url, timeout=2)
        except httpx.HTTPError as exc:
            last = repr(exc)
        else:
            if got.status_code == status:
                return got.text
            last = f"{got.status_code} {got.text}"
        time.sleep(0.5)
    raise AssertionError(f"{url} never answered {status} in {within:g}s; last: {last}")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_the_apiserver_or_control_plane_lost_makes_the_operator_unready_never_dead(
    resources: Resources,
    emulator: Emulator,
    operator_kubeconfig: Path,
    namespace: str,
    proxy: ApiServerProxy,
    tmp_path: Path,
) -> None:
    """`deployplane operator run --liveness ... --readiness ...` as the chart runs it:
    the apiserver lost (its address refuses connections), then the control plane, make
    /readyz answer 503 saying which, while /healthz keeps answering 200; each back, the
    operator is ready again without a restart. A frozen process answers neither."""
    live = f"http://127.0.0.1:{_free_port()}/healthz"
    ready = f"http://127.0.0.1:{_free_port()}/readyz"
    env = operator_env(emulator, operator_kubeconfig, DEPLOYPLANE_UNHEALTHY_AFTER="2")
    probes = ("--liveness", live, "--readiness", ready)
    operator = OperatorProcess(namespace, env, tmp_path / "operator.log", extra_args=probes)
    operator.start()
    try:
        _wait_status(ready, 200, 60)
        assert _probe(live) == 200
        proxy.stop()  # the apiserver lost: its address refuses connections
        assert "kubernetes" in _wait_status(ready, 503, 90)
        assert _probe(live) == 200, "alive: a restart cannot bring the apiserver back"
        proxy.start()
        _wait_status(ready, 200, 120)
        emulator.stop()  # the control plane lost
        try:
            assert "control plane" in _wait_status(ready, 503, 30)
            assert _probe(live) == 200
        finally:
            emulator.start()
        _wait_status(ready, 200, 30)
        assert operator.process is not None
        os.kill(operator.process.pid, signal.SIGSTOP)  # frozen: nothing answers
        try:
            assert _probe(live) is None
        finally:
            os.kill(operator.process.pid, signal.SIGCONT)
        assert _probe(live) == 200
        assert operator.process.poll() is None, "never restarted"
    finally:
        operator.stop()


def test_429_with_retry_after_spaces_the_requests_as_told(
    resources: Resources,
    emulator: Emulator,
    operator_kubeconfig: Path,
    namespace: str,
    proxy: ApiServerProxy,
) -> None:
    status_path = rf"/namespaces/{namespace}/agentdeployments/spaced/status$"
    proxy.throttle("PATCH", status_path, count=3, retry_after=2)
    with kopf_operator(namespace, operator_env(emulator, operator_kubeconfig)):
        resources.create(AGD, docker("spaced"))
        resources.wait(AGD, "spaced", ready_for_generation, what="Ready")
    patches = proxy.matching("PATCH", status_path)
    assert [s for _, s in patches[:4]] == [429, 429, 429, 200]
    gaps = [b[0] - a[0] for a, b in itertools.pairwise(patches[:4])]
    assert all(gap >= 2.0 for gap in gaps), gaps


def test_watches_closed_at_once_again_and_again_keep_the_cpu_bounded(
    resources: Resources,
    emulator: Emulator,
    operator_kubeconfig: Path,
    namespace: str,
    proxy: ApiServerProxy,
) -> None:
    with kopf_operator(namespace, operator_env(emulator, operator_kubeconfig)):
        resources.create(AGD, docker("steady"))
        resources.wait(AGD, "steady", ready_for_generation, what="Ready")
        proxy.close_watches = True
        proxy.cut_watches()
        before_cpu, before_n = time.process_time(), len(proxy.arrivals)
        time.sleep(10)
        cpu = time.process_time() - before_cpu
        watches = [a for a in proxy.arrivals[before_n:] if "watch=true" in a[3]]
        proxy.close_watches = False
    # A hot loop reopens hundreds of watches a second and keeps a core busy; backing
    # off doubles from 1 s: a handful per kind in 10 s.
    assert len(watches) <= 20, len(watches)
    assert cpu < 3.0, f"{cpu:.1f} CPU-s in 10 s"


def test_a_same_name_re_create_during_a_watch_gap_is_a_new_resource_never_the_old_id(
    resources: Resources,
    emulator: Emulator,
    operator_kubeconfig: Path,
    namespace: str,
    proxy: ApiServerProxy,
) -> None:
    env = operator_env(emulator, operator_kubeconfig, DEPLOYPLANE_RESYNC_INTERVAL="2")
    with kopf_operator(namespace, env):
        resources.create(AGD, docker("phoenix"))
        old = resources.wait(AGD, "phoenix", ready_for_generation, what="Ready")
        assert old is not None
        old_id = old["status"]["deploymentId"]
        # The watch goes away (lists and watches of our kinds refused) ...
        proxy.refuse_deployplane = True
        proxy.cut_watches()
        time.sleep(1)
        # ... while the object is deleted (its finalizer taken off by hand) and created
        # again under the same name: the operator never sees a DELETED.
        resources.patch(AGD, "phoenix", {"metadata": {"finalizers": None}})
        resources.delete(AGD, "phoenix")
        resources.wait(AGD, "phoenix", lambda o: o is None, what="gone")
        resources.create(AGD, docker("phoenix"))
        proxy.refuse_deployplane = False
        # The old deployment is orphaned on the control plane (its finalizer was taken
        # off by hand, its tracing project keeps the name): the new object is a new
        # resource, which tries to create its own deployment and says why it cannot;
        # it never takes the old one's id (an operator keyed by name alone would carry
        # the old state over and write nothing at all).
        refused = resources.wait(
            AGD,
            "phoenix",
            lambda o: o is not None and condition(o, "Ready").get("observedGeneration") == 1,
            what="the new one's first status",
        )
        assert refused is not None
        assert refused["metadata"]["uid"] != old["metadata"]["uid"]
        assert refused["status"].get("deploymentId") != old_id
        assert "already exists" in condition(refused, "Ready")["message"]
    # Never the old id; the old deployment (orphaned) is left alone.
    assert [d["id"] for d in emulator.deployments_named("phoenix")] == [old_id]


def kubectl(dev_cluster: E2ECluster, *args: str) -> str:
    return subprocess.run(
        [str(dev_cluster.tools.kubectl), "--kubeconfig", str(dev_cluster.kubeconfig), *args],
        check=True,
        capture_output=True,
        text=True,
    ).stdout


def test_a_status_wiped_by_hand_is_repaired_and_an_agreeing_one_never_written(
    resources: Resources,
    emulator: Emulator,
    operator_kubeconfig: Path,
    namespace: str,
    dev_cluster: E2ECluster,
) -> None:
    env = operator_env(emulator, operator_kubeconfig, DEPLOYPLANE_RESYNC_INTERVAL="1")
    with kopf_operator(namespace, env):
        resources.create(AGD, docker("mended"))
        ready = resources.wait(AGD, "mended", ready_for_generation, what="Ready")
        assert ready is not None
        time.sleep(2)  # the last writes land in the audit log
        since = dt.datetime.now(dt.UTC)
        time.sleep(3)  # three passes, nothing changed
        assert dev_cluster.count_writes(since, namespace=namespace) == {}
        # The object as the patch left it (printed by kubectl): read afterwards, the
        # operator (resyncing every second) may have repaired it already.
        wiped = json.loads(
            kubectl(
                dev_cluster,
                "-n",
                namespace,
                "patch",
                "agentdeployment",
                "mended",
                "--subresource=status",
                "--type=merge",
                "-p",
                '{"status":{"conditions":null,"deploymentId":null}}',
                "-o",
                "json",
            )
        )
        assert condition(wiped, "Ready") == {}
        assert "deploymentId" not in (wiped.get("status") or {})
        repaired = resources.wait(AGD, "mended", ready_for_generation, what="repaired", within=10)
    assert repaired is not None
    assert repaired["status"]["deploymentId"] == ready["status"]["deploymentId"]
    assert len(emulator.deployments_named("mended")) == 1, "repaired, not re-created"


def test_another_controllers_finalizer_added_meanwhile_is_kept(
    resources: Resources,
    emulator: Emulator,
    operator_kubeconfig: Path,
    namespace: str,
    proxy: ApiServerProxy,
) -> None:
    """Our finalizer's patch is held back by a 429 (Retry-After 2 s); another
    controller adds its finalizer meanwhile. The patch, sent again under the
    resourceVersion it was computed at, is refused (409), the object read again, and
    both finalizers end up on it."""
    object_path = rf"/namespaces/{namespace}/agentdeployments/shared$"
    proxy.throttle("PATCH", object_path, count=1, retry_after=2)
    with kopf_operator(namespace, operator_env(emulator, operator_kubeconfig)):
        resources.create(AGD, docker("shared"))
        deadline = time.monotonic() + 30
        while not proxy.matching("PATCH", object_path) and time.monotonic() < deadline:
            time.sleep(0.05)
        resources.patch(AGD, "shared", {"metadata": {"finalizers": ["other.example/keep"]}})
        done = resources.wait(AGD, "shared", ready_for_generation, what="Ready")
    assert done is not None
    assert set(done["metadata"]["finalizers"]) == {"other.example/keep", FINALIZER}
    statuses = [s for _, s in proxy.matching("PATCH", object_path)]
    assert statuses[:3] == [429, 409, 200], statuses
    resources.patch(AGD, "shared", {"metadata": {"finalizers": [FINALIZER]}})


def test_kopf_run_with_a_namespace_glob_brings_the_examples_to_ready(
    k8s_api: client.ApiClient,
    emulator: Emulator,
    kubeconfig: Path,
    crds: None,
    tmp_path: Path,
) -> None:
    """`kopf run -m deployplane.controller.handlers --namespace 'glob-*'`, as any Kopf
    operator is run: a namespace matching the glob, created after the start, is
    watched, and every example in it reaches Ready."""
    prefix = f"kopfglob-{uuid.uuid4().hex[:6]}"
    kopf_cli = Path(sys.executable).with_name("kopf")
    log = (tmp_path / "kopf.log").open("wb")
    env = {**os.environ, **operator_env(emulator, kubeconfig)}
    env.pop("DEPLOYPLANE_NAMESPACES", None)
    process = subprocess.Popen(
        [
            *(str(kopf_cli), "run", "--standalone", "--namespace", f"{prefix}-*"),
            *("-m", "deployplane.controller.handlers"),
        ],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    namespace = f"{prefix}-team"
    core = client.CoreV1Api(k8s_api)
    try:
        time.sleep(3)  # started before the namespace exists
        core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=namespace)))
        docs = [
            yaml.safe_load((REPO / "examples" / f).read_text())
            for f in (
                "secret.yaml",
                "listener.yaml",
                "agentdeployment-docker.yaml",
                "agentdeployment-git.yaml",
            )
        ]
        Applier(k8s_api).apply(docs, namespace=namespace)
        res = Resources(k8s_api, namespace)
        for plural, name in (
            ("listeners", "dev-cluster"),
            (AGD, "support-bot-docker"),
            (AGD, "support-bot"),
        ):
            res.wait(plural, name, ready_for_generation, what="Ready", within=120)
        for plural, name in ((AGD, "support-bot-docker"), (AGD, "support-bot")):
            res.delete(plural, name)
        res.delete("listeners", "dev-cluster")
        for plural, name in ((AGD, "support-bot"), ("listeners", "dev-cluster")):
            res.wait(plural, name, lambda o: o is None, what="finalized", within=120)
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
        core.delete_namespace(namespace)
    assert process.returncode == 0, (tmp_path / "kopf.log").read_text()[-3000:]
