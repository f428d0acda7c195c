"""`helm upgrade` from the previous release to this tree, on the real node, the way
docs/install.md "Upgrading" says, without a storm.

The previous release (tests/support/previousrelease.py: a pinned earlier commit of main
until a second release exists) is installed from its own checkout: its CRDs, then
`helm install` of its chart with its real-node values (the operator and the listener
agent as pods of its own image, built from that checkout), its examples applied (a
ControlPlaneConnection, a Listener, an external_docker AgentDeployment on it whose agent
server, queue, Redis and PostgreSQL run as real containers, a git_host one and an
external_docker one without a listener, which the control plane's timers deploy). The
control plane is the emulator on the host (on the node's veth, which the pods reach):
outside the release, as the real service is, so it outlives the upgrade and counts every
request it answers. Then this tree's CRDs are applied and `helm upgrade` runs with this
tree's chart and image, as the docs say, and the test holds the upgrade to:

- no write to the control plane (the emulator's request counts: nothing but GETs and the
  agent's heartbeat) and no new revision: every resource Ready at its generation and at
  the revision it had;
- every object stored under the previous CRDs valid under the new ones (a server-side
  dry-run create of each, so CRD validation ratcheting cannot wave an unchanged field
  through), the storage version unchanged;
- the agent servers' pods restarted only if the release changed their render: the
  previous release's render and this tree's of the same deployment are compared (each
  release's own render code, tests/support/renderdump.py). Unchanged, every pod of the
  data plane is the one that ran before; changed, the new render is what runs after, the
  agent server's pods rolled with a Ready one at every moment (a watch of them through
  the upgrade), and CHANGELOG.md's newest section says that agent servers restart.

It ends with the resources deleted under the new release: the new agent removes the
workloads the old one made.
"""

from __future__ import annotations

import base64
import contextlib
import json
import re
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import httpx
import pytest
import yaml
from kubernetes import client
from kubernetes.client.exceptions import ApiException
from tests.support import chart, podsecurity, podwatch, polling, previousrelease, realnode
from tests.support.e2ecluster import E2ECluster
from tests.support.operator_harness import (
    ADMIN,
    API_KEY,
    GROUP,
    VERSION,
    WORKSPACE,
    Emulator,
    Resources,
    ready_for_generation,
)

from deployplane.api.models import Deployment
from deployplane.dataplane.render import LABEL_COMPONENT, LABEL_DEPLOYMENT_ID, SERVER
from deployplane.dataplane.render.context import base_name, database_secret_name
from deployplane.demo import realnode as demo_realnode
from deployplane.devcluster.realnode import images, layout

pytestmark = pytest.mark.skipif(
    realnode.skip_reason() is not None, reason=str(realnode.skip_reason())
)
ROOT = Path(__file__).resolve().parents[2]
RELEASE, RELEASE_NS = "deployplane", "dp-upgrade-system"
WATCH, AGENTS = "dp-upgrade", "dp-upgrade-agents"
KEY_SECRET = "control-plane-key"
# The docker example's next image (the agent-server stand-in under another name).
NEXT_IMAGE = "registry.example.com/acme/support-bot:1.0.1"
KINDS = ("controlplaneconnections", "listeners", "agentdeployments")
AGD = "agentdeployments"
OPERATOR = "app.kubernetes.io/component=operator"
AGENT = "app.kubernetes.io/component=listener-agent"
RENDER_DUMP = Path("tests") / "support" / "renderdump.py"
# Requests that change nothing although not GETs: the agent's heartbeat (it records that
# the agent lives) and the vendor API's log queries (POST .../build_logs, deploy_logs).
NOT_WRITES = re.compile(r"^PUT .*/heartbeat$|^POST .*_logs$")
T = TypeVar("T")


def wait_until(what: str, probe: Callable[[], T | None], within: float = 300.0) -> T:
    return polling.wait_until(what, probe, within, interval=1.0)


def kubectl(cluster: E2ECluster, *args: str, stdin: str | None = None) -> str:
    assert cluster.tools.kubectl is not None
    argv = [str(cluster.tools.kubectl), f"--kubeconfig={cluster.kubeconfig}", *args]
    done = subprocess.run(
        argv, input=stdin, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, f"kubectl {' '.join(args)}: {done.stdout}{done.stderr}"
    return done.stdout


def helm(cluster: E2ECluster, *args: str) -> None:
    done = chart.helm(*args, "--kubeconfig", str(cluster.kubeconfig), check=False, timeout=420)
    assert done.returncode == 0, f"helm {' '.join(args[:2])}: {done.stdout}{done.stderr}"


# ------------------------------------------------------------------ fixtures


@pytest.fixture(scope="module")
def previous(
    real_node_session: realnode.Session, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Path, str]:
    """The previous release's checkout, and its image imported into the node."""
    tree = previousrelease.checkout(tmp_path_factory.mktemp("previous") / "tree")
    ctr = real_node_session.cluster.tools.bin_dir / "ctr"
    name = previousrelease.import_image(tree, real_node_session.holder_pid(), ctr)
    for example, stand_in in demo_realnode.STAND_INS.items():
        images.tag(real_node_session.holder_pid(), ctr, stand_in, example)
    (stand_in,) = set(demo_realnode.STAND_INS.values())
    images.tag(real_node_session.holder_pid(), ctr, stand_in, NEXT_IMAGE)
    return tree, name


@pytest.fixture(scope="module")
def control_plane(
    real_node_session: realnode.Session, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Emulator]:
    """The emulator on the host's end of the node's veth (the pods reach it there; it is
    the address the demo's emulator uses), with the data-plane extension the listener
    agent speaks (not strict) and its own request counts (`/_emulator/stats`)."""
    emulator = Emulator(
        tmp_path_factory.mktemp("upgrade-control-plane"),
        strict=False,
        proxied=False,
        args=("--host", layout.HOST_IP),
    ).start()
    try:
        yield emulator
    finally:
        emulator.stop()


@pytest.fixture(scope="module")
def namespaces(k8s_api: client.ApiClient) -> Iterator[None]:
    core = client.CoreV1Api(k8s_api)
    for name in (RELEASE_NS, WATCH, AGENTS):
        core.create_namespace({"metadata": {"name": name}})
    try:
        yield
    finally:
        # A test that failed half-way leaves resources with the operator's finalizer and
        # no operator (the release is uninstalled): they would hold the namespace.
        custom = client.CustomObjectsApi(k8s_api)
        for plural in KINDS:
            with contextlib.suppress(ApiException):
                listed = custom.list_namespaced_custom_object(GROUP, VERSION, WATCH, plural)
                for obj in listed["items"]:
                    custom.patch_namespaced_custom_object(
                        GROUP, VERSION, WATCH, plural, obj["metadata"]["name"],
                        {"metadata": {"finalizers": None}},
                        _content_type="application/merge-patch+json",
                    )  # fmt: skip
        for name in (WATCH, AGENTS, RELEASE_NS):
            with contextlib.suppress(ApiException):
                core.delete_namespace(name)


@pytest.fixture(scope="module")
def crds_restored(dev_cluster: E2ECluster) -> Iterator[None]:
    """This tree's CRDs again at the end, whatever the test left: the tier's other
    modules and helm's install (which skips CRDs that exist) need them."""
    yield
    kubectl(dev_cluster, "apply", "--server-side", "--force-conflicts", "-f", str(CRDS))


CRDS = ROOT / "charts" / "deployplane" / "crds"


# ------------------------------------------------------------------ the previous release


def install_previous(
    cluster: E2ECluster, tree: Path, image: str, control_plane: Emulator, work: Path
) -> None:
    """Its CRDs as a first `helm install` leaves them (created, not applied: an Update
    of their fields by another manager than kubectl's apply), then its chart with its
    real-node values: the operator (one replica: the peering CRDs of a two-replica
    release outlive it, owned by the release that made them) and the listener agent."""
    for crd in sorted((tree / "charts" / "deployplane" / "crds").glob("*.yaml")):
        verb = "replace" if _exists(cluster, yaml.safe_load(crd.read_text())) else "create"
        kubectl(cluster, verb, "-f", str(crd))
    core_values = {
        "image": {"repository": image.rsplit(":", 1)[0], "tag": image.rsplit(":", 1)[1]},
        "replicaCount": 1,
        "emulator": {"enabled": False},
        "watchNamespaces": [WATCH],
        "controlPlane": {
            "url": control_plane.url,
            "tenantId": WORKSPACE,
            "apiKeySecret": {"name": KEY_SECRET, "key": "api-key"},
        },
        "listenerAgent": {"listenerNamespace": WATCH, "namespaces": [AGENTS]},
    }
    overrides = work / "previous-values.json"
    overrides.write_text(json.dumps(core_values))  # JSON is YAML
    values = tree / "examples" / "helm" / "real-node-values.yaml"
    helm(
        cluster, "install", RELEASE, str(tree / "charts" / "deployplane"), "-n", RELEASE_NS,
        "-f", str(values), "-f", str(overrides), "--wait", "--timeout", "5m",
    )  # fmt: skip


def _exists(cluster: E2ECluster, crd: dict[str, Any]) -> bool:
    with cluster.admin() as api:
        try:
            client.ApiextensionsV1Api(api).read_custom_resource_definition(crd["metadata"]["name"])
        except ApiException as exc:
            if exc.status == 404:
                return False
            raise
    return True


def examples(tree: Path, url: str) -> list[tuple[str, dict[str, Any]]]:
    """The previous release's examples, in this test's namespaces: (plural, body)."""

    def load(name: str) -> list[dict[str, Any]]:
        return [d for d in yaml.safe_load_all((tree / "examples" / name).read_text()) if d]

    key, connection = load("controlplaneconnection.yaml")
    key["stringData"] = {"apiKey": API_KEY}
    connection["spec"] |= {"url": url, "tenantId": WORKSPACE}
    (listener,) = load("listener.yaml")
    listener["spec"]["computeConfig"]["k8sNamespaces"] = [AGENTS]
    (docker,) = load("agentdeployment-docker.yaml")
    docker["spec"]["sourceConfig"]["listenerConfig"]["k8sNamespace"] = AGENTS
    # Small requests: a rolling restart needs room for a second server on the one node.
    docker["spec"]["sourceConfig"]["resourceSpec"] |= {"cpu": 0.1, "memoryMb": 256}
    (git,) = load("agentdeployment-git.yaml")
    cloud = {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "AgentDeployment",
        "metadata": {"name": "cloud-docker"},
        "spec": {
            "source": "external_docker",
            "sourceRevisionConfig": {"imageUri": "registry.example.com/acme/cloud:1"},
        },
    }
    (llm_keys,) = load("secret.yaml")
    return [
        ("secrets", key),
        ("secrets", llm_keys),
        ("controlplaneconnections", connection),
        ("listeners", listener),
        (AGD, docker),
        (AGD, git),
        (AGD, cloud),
    ]


def apply_examples(
    cluster: E2ECluster, resources: Resources, made: list[tuple[str, dict[str, Any]]]
) -> None:
    for plural, body in made:
        if plural == "secrets":
            resources.core.create_namespaced_secret(WATCH, body)
        elif plural == AGD and "listenerRef" in body["spec"].get("sourceConfig", {}):
            wait_until("the listener agent running", lambda: _agent_running(cluster))
            resources.create(plural, body)
        else:
            resources.create(plural, body)
    for plural, body in made:
        if plural != "secrets":
            name = body["metadata"]["name"]
            resources.wait(plural, name, ready_for_generation, within=300, what="Ready")


def settled(control_plane: Emulator) -> bool:
    """Every deployment READY and reconciled by the data plane (the published filter
    lists none `remote_reconciled=false`): a resource is Ready once its revision is
    DEPLOYED, while the agent may still report its database ready a moment later."""
    with api(control_plane) as http:
        pending = http.get("/v2/deployments", params={"remote_reconciled": "false"})
        pending.raise_for_status()
        if pending.json()["resources"]:
            return False
    return all(d["status"] == "READY" for d in control_plane.all_deployments())


def _agent_running(cluster: E2ECluster) -> bool:
    logs = kubectl(cluster, "logs", "-n", RELEASE_NS, "-l", AGENT, "--tail=-1")
    return "listener agent running" in logs


# ------------------------------------------------------------------ what is observed


@dataclass(frozen=True)
class Stored:
    """A resource as the previous release left it."""

    generation: int
    resource_version: str
    revision: str | None  # an AgentDeployment's latest revision
    uid: str


def stored(resources: Resources) -> dict[tuple[str, str], Stored]:
    found = {}
    for plural in KINDS:
        for obj in resources.list_all(plural):
            meta, status = obj["metadata"], obj.get("status") or {}
            assert ready_for_generation(obj), (plural, meta["name"], status)
            revision = (status.get("revision") or {}).get("id")
            if plural == AGD:
                assert (status.get("revision") or {}).get("status") == "DEPLOYED", status
            key = (plural, meta["name"])
            found[key] = Stored(meta["generation"], meta["resourceVersion"], revision, meta["uid"])
    return found


def data_plane_pods(core: client.CoreV1Api) -> dict[str, tuple[str, str, int]]:
    """uid -> (component, name, restarts) of every pod the agent runs."""
    return {
        str(p.metadata.uid): (
            str(p.metadata.labels.get(LABEL_COMPONENT)),
            str(p.metadata.name),
            sum(s.restart_count for s in p.status.container_statuses or []),
        )
        for p in core.list_namespaced_pod(AGENTS).items
    }


def api(control_plane: Emulator) -> httpx.Client:
    headers = {"X-Api-Key": API_KEY, "X-Tenant-Id": WORKSPACE}
    return httpx.Client(base_url=control_plane.url, headers=headers, timeout=30)


def revisions(control_plane: Emulator) -> dict[str, tuple[str, int]]:
    """deployment id -> (latest revision id, how many revisions it has)."""
    with api(control_plane) as http:
        found = {}
        for deployment in control_plane.all_deployments():
            listed = http.get(f"/v2/deployments/{deployment['id']}/revisions")
            listed.raise_for_status()
            count = len(listed.json()["resources"])
            found[deployment["id"]] = (deployment["latest_revision_id"], count)
    return found


def writes(control_plane: Emulator) -> dict[str, dict[str, int]]:
    """The requests answered since the counts were reset that are not reads."""
    got = httpx.get(f"{control_plane.url}/_emulator/stats", headers=ADMIN, timeout=10)
    got.raise_for_status()
    requests: dict[str, dict[str, int]] = got.json()["requests"]
    return {
        route: codes
        for route, codes in requests.items()
        if not route.startswith("GET ") and not NOT_WRITES.match(route)
    }


def requests_by_method(control_plane: Emulator) -> dict[str, int]:
    """The requests answered since the counts were reset, by method (a figure printed)."""
    got = httpx.get(f"{control_plane.url}/_emulator/stats", headers=ADMIN, timeout=10)
    found: dict[str, int] = {}
    for route, codes in got.json()["requests"].items():
        method = route.split(" ", 1)[0]
        found[method] = found.get(method, 0) + sum(codes.values())
    return found


def reset_counts(control_plane: Emulator) -> None:
    httpx.delete(f"{control_plane.url}/_emulator/stats", headers=ADMIN, timeout=10)


def requests_to(control_plane: Emulator, route: str) -> int:
    got = httpx.get(f"{control_plane.url}/_emulator/stats", headers=ADMIN, timeout=10)
    return sum(got.json()["requests"].get(route, {}).values())


# ------------------------------------------------------------------ the render, old and new


@dataclass(frozen=True)
class RenderInputs:
    """What the agent renders one deployment from, read once (the deployment and its
    revision must not change through the upgrade: the test asserts it)."""

    deployment: dict[str, Any]
    payload: dict[str, Any]  # renderdump's input but the env

    def render(self, tree: Path, env: dict[str, str]) -> dict[str, Any]:
        """The render of the release whose checkout is `tree` (its own renderdump.py
        when it has one, else this tree's), with the agent settings `env`."""
        script = tree / RENDER_DUMP if (tree / RENDER_DUMP).exists() else ROOT / RENDER_DUMP
        done = subprocess.run(
            [sys.executable, str(script)],
            input=json.dumps({**self.payload, "env": env}),
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
            env={"PYTHONPATH": str(tree / "operator"), "PATH": "/usr/bin:/bin"},
        )
        assert done.returncode == 0, f"{script} under {tree}: {done.stderr[-2000:]}"
        rendered: dict[str, Any] = json.loads(done.stdout)
        return rendered


def render_inputs(
    control_plane: Emulator, core: client.CoreV1Api, listener_id: str, deployment_id: str
) -> RenderInputs:
    with api(control_plane) as http:
        deployment = http.get(f"/v2/deployments/{deployment_id}").json()
        revision_id = deployment["latest_revision_id"]
        revision = http.get(f"/v2/deployments/{deployment_id}/revisions/{revision_id}").json()
        listener = http.get(f"/v2/listeners/{listener_id}").json()
        work = http.get(
            f"/_dataplane/v1/listeners/{listener_id}/deployments/{deployment_id}"
            f"/revisions/{revision_id}"
        ).json()
    secret = core.read_namespaced_secret(
        database_secret_name(Deployment.model_validate(deployment)), AGENTS
    )
    password = base64.b64decode(secret.data["password"]).decode()
    payload = {
        "deployment": deployment,
        "revision": revision,
        "listener": listener,
        "work": work,
        "database_password": password,
    }
    return RenderInputs(deployment, payload)


def agent_env(apps: client.AppsV1Api) -> dict[str, str]:
    """The DEPLOYPLANE_* values of the listener agent's container (its render settings)."""
    (agent,) = apps.list_namespaced_deployment(RELEASE_NS, label_selector=AGENT).items
    (container,) = agent.spec.template.spec.containers
    return {e.name: e.value for e in container.env or [] if e.value is not None}


def pod_templates(rendered: dict[str, Any]) -> dict[str, Any]:
    """component -> the pod template of each Deployment / StatefulSet rendered."""
    return {
        obj["metadata"]["labels"][LABEL_COMPONENT]: obj["spec"]["template"]
        for obj in rendered["objects"]
        if obj["kind"] in ("Deployment", "StatefulSet")
    }


def changed_objects(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    def by_name(rendered: dict[str, Any]) -> dict[str, Any]:
        return {f"{o['kind']}/{o['metadata']['name']}": o for o in rendered["objects"]}

    before, after = by_name(old), by_name(new)
    return sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))


def owner_digest(core: client.CoreV1Api, deployment: dict[str, Any]) -> str:
    name = base_name(Deployment.model_validate(deployment))
    owner = core.read_namespaced_config_map(name, AGENTS)
    return str(owner.data["render-digest"])


def newest_changelog_section() -> str:
    text = (ROOT / "CHANGELOG.md").read_text()
    sections = re.split(r"^## ", text, flags=re.MULTILINE)[1:]
    return sections[0]


# ------------------------------------------------------------------ the upgrade


def upgrade(cluster: E2ECluster) -> None:
    """docs/install.md "Upgrading": the CRDs, then the chart (the values kept, the image
    this tree's: the release pinned a tag)."""
    kubectl(cluster, "apply", "--server-side", "--force-conflicts", "-f", str(CRDS))
    repository, tag = realnode.APP_TAG.rsplit(":", 1)
    helm(
        cluster, "upgrade", RELEASE, str(ROOT / "charts" / "deployplane"), "-n", RELEASE_NS,
        "--reset-then-reuse-values", "--set", f"image.repository={repository}",
        "--set", f"image.tag={tag}", "--wait", "--timeout", "5m",
    )  # fmt: skip


def valid_under_the_new_crds(cluster: E2ECluster, resources: Resources) -> int:
    """Every stored object, created anew by a server-side dry run (under another name):
    validated whole against the new schema and its CEL rules. The number checked."""
    checked = 0
    for plural in KINDS:
        for obj in resources.list_all(plural):
            meta = obj["metadata"]
            copy = {
                "apiVersion": obj["apiVersion"],
                "kind": obj["kind"],
                "metadata": {
                    "name": f"{meta['name']}-stored",
                    "namespace": WATCH,
                    "labels": meta.get("labels") or {},
                    "annotations": meta.get("annotations") or {},
                },
                "spec": obj["spec"],
            }
            kubectl(cluster, "create", "--dry-run=server", "-f", "-", stdin=json.dumps(copy))
            checked += 1
    with cluster.admin() as admin:
        extensions = client.ApiextensionsV1Api(admin)
        for crd in extensions.list_custom_resource_definition().items:
            if crd.spec.group == GROUP:
                assert crd.status.stored_versions == [VERSION], crd.metadata.name
    return checked


def operator_passed_every_resource(cluster: E2ECluster, counts: dict[str, int]) -> bool:
    """The new operator's first pass reached every resource: its reconcile counter per
    kind, read from its /metrics inside the pod, is at least the number of each kind."""
    with cluster.admin() as admin:
        pods = client.CoreV1Api(admin).list_namespaced_pod(RELEASE_NS, label_selector=OPERATOR)
    names = [p.metadata.name for p in pods.items if p.metadata.deletion_timestamp is None]
    read = "import urllib.request as u; print(u.urlopen('http://127.0.0.1:9090/metrics').read().decode())"
    passes: dict[str, float] = {}
    for name in names:
        text = kubectl(cluster, "exec", "-n", RELEASE_NS, name, "--", "python3", "-c", read)
        for kind, value in re.findall(
            r'^deployplane_reconciles_total\{kind="([^"]+)",[^}]*\} (\S+)$', text, re.MULTILINE
        ):
            passes[kind] = passes.get(kind, 0) + float(value)
    return all(passes.get(kind, 0) >= n for kind, n in counts.items())


@pytest.mark.timeout(900)  # two releases installed, resources made and deleted
def test_helm_upgrade_from_the_previous_release_writes_nothing_and_rolls_only_a_new_render(
    previous: tuple[Path, str],
    control_plane: Emulator,
    namespaces: None,
    crds_restored: None,
    dev_cluster: E2ECluster,
    k8s_api: client.ApiClient,
    tmp_path: Path,
) -> None:
    tree, image = previous
    core, apps = client.CoreV1Api(k8s_api), client.AppsV1Api(k8s_api)
    core.create_namespaced_secret(
        RELEASE_NS, {"metadata": {"name": KEY_SECRET}, "stringData": {"api-key": API_KEY}}
    )
    resources = Resources(k8s_api, WATCH)
    spent = Stopwatch()
    install_previous(dev_cluster, tree, image, control_plane, tmp_path)
    spent.lap("the previous release installed")
    try:
        made = examples(tree, control_plane.url)
        apply_examples(dev_cluster, resources, made)
        spent.lap("its resources Ready")
        _upgrade_and_check(dev_cluster, k8s_api, tree, control_plane, resources)
        spent.lap("upgraded and checked")
        a_new_revision_under_the_new_release(resources, core)
        spent.lap("a new revision rolled out")
        delete_under_the_new_release(resources, apps, made)
        spent.lap("deleted under the new release")
        print(spent)
    finally:
        chart.helm("uninstall", RELEASE, "-n", RELEASE_NS, "--kubeconfig",
                   str(dev_cluster.kubeconfig), check=False, timeout=300)  # fmt: skip


class Stopwatch:
    """Where the test's time goes, printed (a measurement; nothing asserts on it)."""

    def __init__(self) -> None:
        self.last = time.monotonic()
        self.laps: list[str] = []

    def lap(self, what: str) -> None:
        now = time.monotonic()
        self.laps.append(f"{what} {now - self.last:.0f} s")
        self.last = now

    def __str__(self) -> str:
        return "; ".join(self.laps)


def a_new_revision_under_the_new_release(resources: Resources, core: client.CoreV1Api) -> None:
    """The new release at work: a new image for the docker deployment is a new revision,
    DEPLOYED by the new agent's pod, its servers real containers that Pod Security
    `restricted` admitted, Ready through their probes."""
    before = resources.get(AGD, "support-bot-docker")
    assert before is not None
    resources.patch(
        AGD, "support-bot-docker", {"spec": {"sourceRevisionConfig": {"imageUri": NEXT_IMAGE}}}
    )
    was = before["status"]["revision"]["id"]

    def deployed_anew(obj: dict[str, Any] | None) -> bool:
        revision = ((obj or {}).get("status") or {}).get("revision") or {}
        return (
            ready_for_generation(obj)
            and revision.get("status") == "DEPLOYED"
            and (revision.get("id") != was)
        )

    after = resources.wait(
        AGD, "support-bot-docker", deployed_anew, within=300, what="the new revision DEPLOYED"
    )
    assert after is not None
    selector = f"{LABEL_COMPONENT}={SERVER},{LABEL_DEPLOYMENT_ID}={after['status']['deploymentId']}"
    servers = [
        p
        for p in core.list_namespaced_pod(AGENTS, label_selector=selector).items
        if p.metadata.deletion_timestamp is None
    ]
    assert servers, "no agent server of the new revision"
    for pod in servers:  # DEPLOYED: the rollout's pods passed their real readiness probe
        assert pod.spec.node_name == "deployplane-node"
        assert pod.spec.containers[0].image == NEXT_IMAGE
        assert all(s.ready and s.state.running for s in pod.status.container_statuses)


def delete_under_the_new_release(
    resources: Resources, apps: client.AppsV1Api, made: list[tuple[str, dict[str, Any]]]
) -> None:
    """The AgentDeployments first (each gone once its deployment is), the workloads the
    previous agent made removed by the new one, then the Listener and the connection."""

    def delete(plural: str) -> None:
        names = [b["metadata"]["name"] for p, b in made if p == plural]
        for name in names:
            resources.delete(plural, name)
        for name in names:
            resources.wait(plural, name, lambda o: o is None, within=300, what="deleted")

    delete(AGD)
    wait_until(
        "the new agent to remove the workloads the previous one made",
        lambda: not apps.list_namespaced_deployment(AGENTS).items or None,
    )
    delete("listeners")
    delete("controlplaneconnections")


def _upgrade_and_check(
    cluster: E2ECluster,
    k8s_api: client.ApiClient,
    tree: Path,
    control_plane: Emulator,
    resources: Resources,
) -> None:
    core, apps = client.CoreV1Api(k8s_api), client.AppsV1Api(k8s_api)
    wait_until("every deployment settled on the control plane", lambda: settled(control_plane))
    # A platform team enforces Pod Security `restricted` where the agents run (the pods
    # running keep running; every pod made from now on is held to it).
    core.patch_namespace(AGENTS, {"metadata": {"labels": podsecurity.RESTRICTED}})
    podsecurity.enforces_restricted(k8s_api, AGENTS)
    before = stored(resources)
    listener = resources.get("listeners", "dev-cluster")
    assert listener is not None
    listener_id = listener["status"]["listenerId"]
    docker = resources.get(AGD, "support-bot-docker")
    assert docker is not None
    inputs = render_inputs(control_plane, core, listener_id, docker["status"]["deploymentId"])
    old_render = inputs.render(tree, agent_env(apps))
    assert owner_digest(core, inputs.deployment) == old_render["digest"], (
        "the previous release's render, redone here, is not the one its agent applied"
    )
    on_control_plane = revisions(control_plane)
    pods_before = data_plane_pods(core)
    assert pods_before, "no pod of the data plane before the upgrade"
    kinds = {k: sum(1 for p, _ in before if p == k) for k in KINDS}
    work_route = (
        "GET /_dataplane/v1/listeners/{listener_id}/deployments/{deployment_id}"
        "/revisions/{revision_id}"
    )
    selector = (
        f"{LABEL_COMPONENT}={SERVER},{LABEL_DEPLOYMENT_ID}={docker['status']['deploymentId']}"
    )

    reset_counts(control_plane)
    with podwatch.WatchedPods(cluster.api_client, AGENTS, selector) as servers:
        upgrade(cluster)
        checked = valid_under_the_new_crds(cluster, resources)
        wait_until(
            "the new operator's first pass over every resource",
            lambda: operator_passed_every_resource(cluster, _kind_names(kinds)),
        )
        wait_until(  # the new agent's first full round renders each deployment it runs
            "the new agent's first full round",
            lambda: requests_to(control_plane, work_route) >= 1,
        )
        new_render = inputs.render(ROOT, agent_env(apps))
        changed = changed_objects(old_render, new_render)
        templates = pod_templates(old_render), pod_templates(new_render)
        restarting = sorted(c for c in templates[1] if templates[0].get(c) != templates[1][c])
        wait_until(
            "this release's render applied, and rolled out",
            lambda: (
                owner_digest(core, inputs.deployment) == new_render["digest"]
                and _rolled_out(apps, core)
            ),
        )
    print(
        f"render changed: {changed or 'nothing'}; pod templates changed: {restarting or 'none'}; "
        f"{checked} stored objects valid under the new CRDs; agent-server pods seen "
        f"{len(servers.timeline.serving)}, fewest Ready at once {servers.timeline.fewest}; "
        f"control-plane requests during the upgrade {requests_by_method(control_plane)}"
    )
    assert writes(control_plane) == {}, "the upgrade wrote to the control plane"
    assert revisions(control_plane) == on_control_plane, "the upgrade made revisions"
    after = stored(resources)
    assert after.keys() == before.keys()
    for key, was in before.items():
        now = after[key]
        assert (now.uid, now.generation, now.revision) == (was.uid, was.generation, was.revision), (
            key
        )
    changed_versions = sorted(
        k for k in before if after[k].resource_version != before[k].resource_version
    )
    # The previous operator wrote a deployment's status as it was at DEPLOYED (its
    # database not ready yet) until its next resync; the new one's first pass says READY.
    print(f"resources whose resourceVersion changed (status written): {changed_versions or 'none'}")
    pods_after = data_plane_pods(core)
    if not restarting:
        assert pods_after == pods_before, "pods restarted, but the render of no workload changed"
        return
    section = newest_changelog_section()
    assert "agent servers restart" in section.lower(), (
        f"the render changed ({changed}): CHANGELOG.md's newest section must say that the "
        "agent servers restart on upgrade"
    )
    if SERVER in restarting:
        assert servers.timeline.fewest >= 1, "a moment without a Ready agent server"
        old_servers = {u for u, (c, _, _) in pods_before.items() if c == SERVER}
        assert not old_servers & pods_after.keys(), "an agent server of the old render still runs"
    kept = {c for c in templates[1] if c not in restarting}
    for uid, (component, name, restarts) in pods_before.items():
        if component in kept:
            assert pods_after.get(uid) == (component, name, restarts), name


def _kind_names(kinds: dict[str, int]) -> dict[str, int]:
    names = {
        "controlplaneconnections": "ControlPlaneConnection",
        "listeners": "Listener",
        "agentdeployments": "AgentDeployment",
    }
    return {names[plural]: n for plural, n in kinds.items()}


def _rolled_out(apps: client.AppsV1Api, core: client.CoreV1Api) -> bool:
    """Every workload of the data plane at its newest generation, all replicas updated
    and available, and no pod of an older template left terminating."""
    found = [
        *apps.list_namespaced_deployment(AGENTS).items,
        *apps.list_namespaced_stateful_set(AGENTS).items,
    ]
    leaving = [p for p in core.list_namespaced_pod(AGENTS).items if p.metadata.deletion_timestamp]
    return (
        bool(found)
        and not leaving
        and all(
            w.status.observed_generation == w.metadata.generation
            and (w.status.updated_replicas or 0) == (w.spec.replicas or 0)
            and (w.status.ready_replicas or 0) == (w.spec.replicas or 0)
            for w in found
        )
    )
