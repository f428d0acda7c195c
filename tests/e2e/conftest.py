"""Fixtures for tests against a real kube-apiserver (`deployplane.devcluster`).

- `dev_cluster` (session): etcd + kube-apiserver + kube-controller-manager, audit log on.
  One cluster for the whole run: each test gets its own namespace instead.
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

Without the binaries the tests skip locally (run `make tools`) and fail under CI=true:
CI must never pass by silently skipping the end-to-end tests.
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
from kubernetes import client
from kubernetes.client.exceptions import ApiException
from tests.e2e.operator_harness import Emulator

from deployplane.devcluster import DevCluster, ToolsNotFound, find_tools, service_account_username
from deployplane.devcluster.fixtures import ApplyManifest, ServiceAccountClient
from deployplane.devcluster.manifests import Applier, Manifest
from deployplane.devcluster.serviceaccounts import request_token

_HERE = Path(__file__).parent
E2E_LABEL = "deployplane.io/e2e"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # Every test in this directory needs the cluster, so every one carries the marker
    # (`-m "not e2e"` deselects them all).
    for item in items:
        if _HERE in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.e2e)


@pytest.fixture(scope="session")
def dev_cluster() -> Iterator[DevCluster]:
    try:
        tools = find_tools()
    except ToolsNotFound as e:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"end-to-end tests need the dev cluster binaries: {e}", pytrace=False)
        pytest.skip(f"no dev cluster binaries: {e}")
    with DevCluster(audit_log=True, tools=tools, workloads=True) as cluster:
        yield cluster


@pytest.fixture(scope="session")
def kubeconfig(dev_cluster: DevCluster) -> Path:
    return dev_cluster.kubeconfig


@pytest.fixture(scope="session")
def k8s_api(dev_cluster: DevCluster) -> Iterator[client.ApiClient]:
    with dev_cluster.admin() as api:
        yield api


def _namespace_name(test_name: str) -> str:
    slug = re.sub(r"[^a-z0-9]+", "-", test_name.lower()).strip("-")[:40].strip("-")
    return f"e2e-{slug}-{uuid.uuid4().hex[:6]}"


@pytest.fixture
def namespace(request: pytest.FixtureRequest, k8s_api: client.ApiClient) -> Iterator[str]:
    name = _namespace_name(request.node.name)
    core = client.CoreV1Api(k8s_api)
    meta = client.V1ObjectMeta(name=name, labels={E2E_LABEL: "true"})
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
    dev_cluster: DevCluster, k8s_api: client.ApiClient, applier: Applier, namespace: str
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
def emulator(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Emulator]:
    """The control-plane emulator as a server process on 127.0.0.1, one per test module."""
    emu = Emulator(tmp_path_factory.mktemp("emulator")).start()
    yield emu
    emu.stop()
