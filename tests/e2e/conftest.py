"""Fixtures for tests against a real kube-apiserver (`deployplane.devcluster`).

- `dev_cluster` (session, an `E2ECluster`, tests/support/e2ecluster.py): etcd +
  kube-apiserver + kube-controller-manager + scheduler and kwok nodes, audit log on.
  One cluster for the whole run: each test gets its own namespace instead.
- `started_cluster` (session): the same `DevCluster`, for the tests of the dev cluster
  itself (its binaries, settings, state directory); skipped on an existing cluster.
- `workloads` (session, tests/support/nodes.py): the Ready nodes that accept the tests'
  pods, detected on the cluster (skipped when there are none); `workload_images` also
  needs images those nodes can run (kwok runs any; real nodes DEPLOYPLANE_E2E_AGENT_IMAGE);
  `kwok_nodes`: the dev cluster's simulated nodes by name (skipped without them).
- `kubeconfig` (session): the admin kubeconfig path.
- `k8s_api` (session): an admin `kubernetes.client.ApiClient`.
- `namespace`: a fresh namespace per test, deleted afterwards.
- `apply_manifest(manifest, *, namespace=None) -> list[dict]`: server-side apply of a YAML
  string, dict or list of dicts; namespaced objects default to the test's namespace;
  CRDs are waited for (Established, in discovery); cluster-scoped objects are deleted
  after the test.
- `service_account_client(name, rules=None, *, namespace=None, cluster_rules=None)
  -> ApiClient`: a ServiceAccount (in the test's namespace by default) with a Role /
  ClusterRole holding exactly `rules` / `cluster_rules`, and a client using its
  TokenRequest token. `dev_cluster.service_account_kubeconfig(ns, name, path)` writes
  the same credentials as a kubeconfig (for running the operator as that account).

Real-node mode (`make e2e-real-node` sets DEPLOYPLANE_E2E_REAL_NODE=1): `dev_cluster` is
`real_node_session`'s cluster, one real node and no kwok nodes with the built images
imported (tests/support/realnode.py); tests a module lists in RUN_LAST run at the end, a
module with RUN_FIRST (a real node of its own) at the start.

GitOps mode (`make e2e-gitops` sets DEPLOYPLANE_E2E_GITOPS=1): `dev_cluster` is
`gitops_session`'s cluster, started by `deployplane dev cluster up --gitops --workloads`
with Argo CD, Flux and the git server beside it (tests/support/gitops.py).

Without the binaries the tests skip locally (run `make tools`) and fail under CI=true:
CI must never pass by silently skipping the end-to-end tests.

Existing-cluster mode (`make e2e KUBECONFIG=path` sets DEPLOYPLANE_E2E_KUBECONFIG): no
dev cluster is started; `dev_cluster` is a `tests.support.existing_cluster.
ExistingCluster` on that kubeconfig's current context. The session applies the CRDs
(deleted again at the end only if it created them), with DEPLOYPLANE_E2E_INSTALL=helm
also installs the chart in a namespace of its own (`helm_release`), labels every test
namespace with this run's id, deletes whatever of them is left at the end and fails the
session if any of them (or a CRD it created) is still there after a bounded wait. What
such a cluster cannot do is skipped with a one-line reason naming what it lacks: the
modules that test the dev cluster itself or no cluster at all (DEV_CLUSTER_ONLY),
audit-log request counts, nodes that accept pods, kwok nodes, an image real nodes can run.
"""

from __future__ import annotations

import contextlib
import os
import re
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client
from kubernetes.client.exceptions import ApiException
from tests.support import chart, gitops, nodes, realnode, runorder
from tests.support.e2e_fixture_types import ApplyManifest, ServiceAccountClient
from tests.support.e2ecluster import E2ECluster
from tests.support.existing_cluster import ENV_KUBECONFIG, ExistingCluster
from tests.support.nodes import Workloads
from tests.support.operator_harness import REPO, Emulator, Resources

from deployplane.devcluster import DevCluster, ToolsNotFound, find_tools, service_account_username
from deployplane.devcluster.manifests import Applier, Manifest
from deployplane.devcluster.serviceaccounts import request_token
from deployplane.devcluster.workloads import node_names
from deployplane.externals.keyprotection import SECRET_PROTECTION

_HERE = Path(__file__).parent
E2E_LABEL = "deployplane.io/e2e"
RUN_LABEL = "deployplane.io/e2e-run"
RUN_ID = uuid.uuid4().hex[:8]
EXISTING = os.environ.get(ENV_KUBECONFIG, "")
ENV_INSTALL = "DEPLOYPLANE_E2E_INSTALL"
DEV_CLUSTER_ONLY = {
    "test_devcluster.py": "tests the dev cluster itself (start, stop, audit log, CLI)",
    "test_demo.py": "`deployplane demo up` starts its own dev cluster",
    # needs no cluster at all: once per `make test` is enough (the dev-cluster run)
    "test_images.py": "builds this machine's images (tools/images/), no cluster involved",
}


# After pytest-random-order has shuffled the tests, so that RUN_FIRST and RUN_LAST hold
# in any order (tests/support/runorder.py).
@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # Every test in this directory needs the cluster, so every one carries the marker
    # (`-m "not e2e"` deselects them all).
    items.sort(key=runorder.place)
    for item in items:
        path = Path(str(item.fspath))
        if _HERE in path.parents:
            item.add_marker(pytest.mark.e2e)
            if EXISTING and path.name in DEV_CLUSTER_ONLY:
                reason = f"existing cluster ({ENV_KUBECONFIG}): {DEV_CLUSTER_ONLY[path.name]}"
                item.add_marker(pytest.mark.skip(reason=reason))


def pytest_report_header() -> str:
    if EXISTING:
        return f"e2e: existing cluster {EXISTING} (run {RUN_ID}, install: {_install_mode()})"
    return "e2e: dev cluster started by the session"


def _install_mode() -> str:
    return os.environ.get(ENV_INSTALL, "") or "crds"


@pytest.fixture(scope="session")
def real_node_session(tmp_path_factory: pytest.TempPathFactory) -> Iterator[realnode.Session]:
    """The real-node tier's cluster (DEPLOYPLANE_E2E_REAL_NODE=1, tests/support/realnode.py)."""
    reason = realnode.skip_reason()
    if reason is not None:
        if realnode.enabled() and os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"the real-node tier cannot run: {reason}", pytrace=False)
        pytest.skip(reason)
    session = realnode.start(tmp_path_factory.mktemp("realnode"))
    try:
        yield session
    finally:
        session.cluster.stop()


@pytest.fixture(scope="session")
def gitops_session(tmp_path_factory: pytest.TempPathFactory) -> Iterator[gitops.Session]:
    """The GitOps tier's cluster (DEPLOYPLANE_E2E_GITOPS=1, tests/support/gitops.py)."""
    reason = gitops.skip_reason()
    if reason is not None:
        if gitops.enabled() and os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"the GitOps tier cannot run: {reason}", pytrace=False)
        pytest.skip(reason)
    session = gitops.start(tmp_path_factory.mktemp("gitops"))
    try:
        yield session
    finally:
        session.cluster.stop()  # a no-op once the tier's last test has run `down`


@pytest.fixture(scope="session")
def dev_cluster(request: pytest.FixtureRequest) -> Iterator[E2ECluster]:
    # Typed with the Protocol both kinds of cluster satisfy: mypy refuses a test that
    # uses what only the dev cluster has (use `started_cluster` for that).
    if EXISTING:
        yield from _existing_cluster(Path(EXISTING))
        return
    if realnode.enabled():
        session: realnode.Session = request.getfixturevalue("real_node_session")
        yield session.cluster
        return
    if gitops.enabled():
        with_gitops: gitops.Session = request.getfixturevalue("gitops_session")
        yield with_gitops.cluster
        return
    try:
        tools = find_tools()
    except ToolsNotFound as e:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"end-to-end tests need the dev cluster binaries: {e}", pytrace=False)
        pytest.skip(f"no dev cluster binaries: {e}")
    with DevCluster(audit_log=True, tools=tools, workloads=True) as cluster:
        yield cluster


@pytest.fixture(scope="session")
def started_cluster(dev_cluster: E2ECluster) -> DevCluster:
    """The dev cluster this session started, for tests of the dev cluster itself."""
    if not isinstance(dev_cluster, DevCluster):
        pytest.skip(
            f"existing cluster ({ENV_KUBECONFIG}): needs the dev cluster the session starts"
        )
    return dev_cluster


@pytest.fixture(scope="session")
def kwok_nodes(dev_cluster: E2ECluster, k8s_api: client.ApiClient) -> list[str]:
    """The kwok nodes' names: those the dev cluster was started with, or on an existing
    cluster those it has."""
    if isinstance(dev_cluster, DevCluster):
        return node_names(dev_cluster.settings.nodes)
    found = nodes.kwok_node_names(k8s_api)
    if not found:
        pytest.skip(nodes.NO_KWOK)
    return found


@pytest.fixture(scope="session")
def workloads(k8s_api: client.ApiClient) -> Workloads:
    """The nodes that accept the tests' pods (detected; skipped when there are none)."""
    found = nodes.workloads(k8s_api)
    if not found.nodes:
        pytest.skip(nodes.NO_NODES)
    return found


@pytest.fixture(scope="session")
def workload_images(workloads: Workloads) -> Workloads:
    """`workloads` whose `agent_image(tag)` the nodes can run and report Ready."""
    if workloads.agent_repository is None:
        pytest.skip(nodes.NO_AGENT_IMAGE)
    return workloads


def _existing_cluster(kubeconfig: Path) -> Iterator[ExistingCluster]:
    if _install_mode() not in ("crds", "helm"):
        pytest.fail(f"{ENV_INSTALL}={_install_mode()}: expected crds or helm", pytrace=False)
    cluster = ExistingCluster(kubeconfig)
    with cluster.admin() as api:
        created = _install_crds(api)
        try:
            yield cluster
        finally:
            namespaces = _delete_run_namespaces(api)
            # The operators of the tests are gone: resources they left with their finalizer
            # would hold their namespace (and a CRD being deleted) in Terminating forever.
            _release_finalizers(api, namespaces, everywhere=created)
            _delete_crds(api, created)
            _assert_nothing_left(api, created)


def _assert_nothing_left(api: client.ApiClient, crds: list[str]) -> None:
    """The run leaves the cluster as it found it: no namespace of this run, none of the
    CRDs it created. Deletion finishes in the background, hence the bounded wait."""
    core = client.CoreV1Api(api)
    extensions = client.ApiextensionsV1Api(api)
    selector = f"{RUN_LABEL}={RUN_ID}"
    deadline = time.monotonic() + 180
    while True:
        left = [ns.metadata.name for ns in core.list_namespace(label_selector=selector).items]
        names = {c.metadata.name for c in extensions.list_custom_resource_definition().items}
        kept = sorted(names & set(crds))
        if not left and not kept:
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"e2e run {RUN_ID} left behind namespaces {left}, CRDs {kept}")
        time.sleep(0.5)


def _crd_documents() -> list[dict[str, Any]]:
    return [
        yaml.safe_load(p.read_text()) for p in sorted((REPO / "crds").glob("*.deployplane.io.yaml"))
    ]


def _install_crds(api: client.ApiClient) -> list[str]:
    """Apply the committed CRDs; the names of those that were not there before."""
    extensions = client.ApiextensionsV1Api(api)
    created = []
    for doc in _crd_documents():
        try:
            extensions.read_custom_resource_definition(doc["metadata"]["name"])
        except ApiException as e:
            if e.status != 404:
                raise
            created.append(doc["metadata"]["name"])
    Applier(api).apply(_crd_documents())
    return created


def _delete_crds(api: client.ApiClient, names: list[str]) -> None:
    # Only the CRDs this run created: deleting one the cluster had would delete its users'
    # resources with it.
    extensions = client.ApiextensionsV1Api(api)
    for name in names:
        with contextlib.suppress(ApiException):
            extensions.delete_custom_resource_definition(name)


def _delete_run_namespaces(api: client.ApiClient) -> list[str]:
    core = client.CoreV1Api(api)
    names = [
        ns.metadata.name for ns in core.list_namespace(label_selector=f"{RUN_LABEL}={RUN_ID}").items
    ]
    for name in names:
        with contextlib.suppress(ApiException):
            core.delete_namespace(name)
    return names


def _release_finalizers(
    api: client.ApiClient, namespaces: list[str], everywhere: list[str]
) -> None:
    """Drop the finalizers of deployplane resources in this run's namespaces, and of every
    resource of a CRD this run created (all of those are this run's), and the operator's
    in-use protection of the Secrets in this run's namespaces."""
    _release_secrets(api, namespaces)
    custom = client.CustomObjectsApi(api)
    for crd in _crd_documents():
        plural, group = crd["spec"]["names"]["plural"], crd["spec"]["group"]
        version = crd["spec"]["versions"][0]["name"]
        try:
            items = custom.list_cluster_custom_object(group, version, plural)["items"]
        except ApiException:
            continue
        for obj in items:
            meta = obj["metadata"]
            if not meta.get("finalizers"):
                continue
            if meta["namespace"] in namespaces or crd["metadata"]["name"] in everywhere:
                with contextlib.suppress(ApiException):
                    custom.patch_namespaced_custom_object(
                        group, version, meta["namespace"], plural, meta["name"],
                        {"metadata": {"finalizers": None}},
                        _content_type="application/merge-patch+json",
                    )  # fmt: skip


def _release_secrets(api: client.ApiClient, namespaces: list[str]) -> None:
    """Our finalizer off the Secrets an operator of the tests protected (an API key in
    use when the test ended): only ours, another's stays."""
    core = client.CoreV1Api(api)
    for namespace in namespaces:
        with contextlib.suppress(ApiException):
            for secret in core.list_namespaced_secret(namespace).items:
                finalizers = secret.metadata.finalizers or []
                if SECRET_PROTECTION not in finalizers:
                    continue
                kept = [f for f in finalizers if f != SECRET_PROTECTION]
                with contextlib.suppress(ApiException):
                    core.patch_namespaced_secret(
                        secret.metadata.name,
                        namespace,
                        {"metadata": {"finalizers": kept or None}},
                    )


@pytest.fixture
def agent_poll_interval() -> float:
    """Seconds between the listener agent's rounds in the data-plane fixtures
    (tests/support/dataplane_fixtures.py); a module that needs slower rounds overrides it."""
    return 0.5


@pytest.fixture(scope="session")
def kubeconfig(dev_cluster: E2ECluster) -> Path:
    return dev_cluster.kubeconfig


@pytest.fixture(scope="session")
def k8s_api(dev_cluster: E2ECluster) -> Iterator[client.ApiClient]:
    with dev_cluster.admin() as api:
        yield api


def _namespace_name(test_name: str) -> str:
    slug = re.sub(r"[^a-z0-9]+", "-", test_name.lower()).strip("-")[:40].strip("-")
    return f"e2e-{slug}-{uuid.uuid4().hex[:6]}"


@pytest.fixture
def namespace(request: pytest.FixtureRequest, k8s_api: client.ApiClient) -> Iterator[str]:
    name = _namespace_name(request.node.name)
    core = client.CoreV1Api(k8s_api)
    meta = client.V1ObjectMeta(name=name, labels={E2E_LABEL: "true", RUN_LABEL: RUN_ID})
    core.create_namespace(client.V1Namespace(metadata=meta))
    yield name
    # Not waited for: the controller-manager empties and removes it in the background,
    # and no later test uses the name.
    with contextlib.suppress(ApiException):
        core.delete_namespace(name)


@pytest.fixture
def applier(k8s_api: client.ApiClient, namespace: str) -> Iterator[Applier]:
    applier = Applier(k8s_api)
    yield applier
    applier.delete_applied(keep_namespace=namespace)


@pytest.fixture
def apply_manifest(applier: Applier, namespace: str) -> ApplyManifest:
    def apply(manifest: Manifest, *, namespace: str | None = namespace) -> list[dict[str, Any]]:
        return applier.apply(manifest, namespace=namespace)

    return apply


def _wait_authorized(
    api: client.ApiClient, user: str, namespace: str | None, rule: dict[str, Any]
) -> None:
    """Block until the RBAC authorizer, which reads bindings from an informer cache,
    allows the first verb/resource of `rule`: right after a RoleBinding is created a
    request can still be refused for a few milliseconds."""
    if "resources" not in rule:
        return  # nonResourceURLs rules: nothing namespaced to ask about
    attributes = client.V1ResourceAttributes(
        namespace=namespace,
        verb=rule["verbs"][0],
        group=(rule.get("apiGroups") or [""])[0],
        resource=rule["resources"][0],
        name=(rule.get("resourceNames") or [None])[0],
    )
    spec = client.V1SubjectAccessReviewSpec(
        user=user,
        groups=["system:serviceaccounts", "system:authenticated"],
        resource_attributes=attributes,
    )
    authz = client.AuthorizationV1Api(api)
    deadline = time.monotonic() + 10
    while True:
        review = authz.create_subject_access_review(client.V1SubjectAccessReview(spec=spec))
        if review.status is not None and review.status.allowed:
            return
        if time.monotonic() > deadline:
            raise TimeoutError(f"{user} still not allowed {rule} after 10s")
        time.sleep(0.05)


@pytest.fixture
def service_account_client(
    dev_cluster: E2ECluster, k8s_api: client.ApiClient, applier: Applier, namespace: str
) -> Iterator[ServiceAccountClient]:
    clients = contextlib.ExitStack()

    def make(
        name: str,
        rules: list[dict[str, Any]] | None = None,
        *,
        namespace: str | None = namespace,
        cluster_rules: list[dict[str, Any]] | None = None,
    ) -> client.ApiClient:
        assert namespace is not None
        user = service_account_username(namespace, name)
        subject = {"kind": "ServiceAccount", "name": name, "namespace": namespace}
        docs: list[dict[str, Any]] = [
            {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name}}
        ]
        rbac = "rbac.authorization.k8s.io/v1"
        if rules:
            ref = {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name}
            docs += [
                {"apiVersion": rbac, "kind": "Role", "metadata": {"name": name}, "rules": rules},
                {
                    "apiVersion": rbac,
                    "kind": "RoleBinding",
                    "metadata": {"name": name},
                    "roleRef": ref,
                    "subjects": [subject],
                },
            ]
        cluster_name = f"{namespace}-{name}"
        if cluster_rules:
            ref = {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole"}
            docs += [
                {
                    "apiVersion": rbac,
                    "kind": "ClusterRole",
                    "metadata": {"name": cluster_name},
                    "rules": cluster_rules,
                },
                {
                    "apiVersion": rbac,
                    "kind": "ClusterRoleBinding",
                    "metadata": {"name": cluster_name},
                    "roleRef": {**ref, "name": cluster_name},
                    "subjects": [subject],
                },
            ]
        applier.apply(docs, namespace=namespace)
        if rules:
            _wait_authorized(k8s_api, user, namespace, rules[0])
        if cluster_rules:
            _wait_authorized(k8s_api, user, None, cluster_rules[0])
        api = dev_cluster.api_client(token=request_token(k8s_api, namespace, name))
        return clients.enter_context(contextlib.closing(api))

    with clients:
        yield make


@pytest.fixture(scope="module")
def crds(k8s_api: client.ApiClient) -> None:
    """The committed CRDs (crds/*.deployplane.io.yaml), applied once per module (a
    module that needs others, such as the peering CRD, defines its own)."""
    docs = [
        yaml.safe_load(p.read_text()) for p in sorted((REPO / "crds").glob("*.deployplane.io.yaml"))
    ]
    Applier(k8s_api).apply(docs)


@pytest.fixture
def resources(k8s_api: client.ApiClient, namespace: str, crds: None) -> Resources:
    """The deployplane custom resources of the test's namespace (CRDs applied)."""
    return Resources(k8s_api, namespace)


@pytest.fixture(scope="module")
def emulator(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Emulator]:
    """The control-plane emulator as a server process on 127.0.0.1, one per test module."""
    emu = Emulator(tmp_path_factory.mktemp("emulator")).start()
    yield emu
    emu.stop()


@pytest.fixture(scope="session")
def helm_release(dev_cluster: E2ECluster) -> Iterator[dict[str, str]]:
    """With DEPLOYPLANE_E2E_INSTALL=helm on an existing cluster: the chart installed (with
    the in-cluster emulator) in a namespace of its own, watching only that namespace, so
    it never races the operators the other tests run. Image from DEPLOYPLANE_E2E_IMAGE
    (repository:tag, e.g. the one `kind load docker-image` loaded)."""
    if not EXISTING or _install_mode() != "helm":
        pytest.skip(f"only with {ENV_KUBECONFIG} and {ENV_INSTALL}=helm (make e2e INSTALL=helm)")
    image = os.environ.get("DEPLOYPLANE_E2E_IMAGE") or "deployplane:dev"
    with chart.release(dev_cluster, RUN_ID, image) as release:
        yield release
