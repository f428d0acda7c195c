"""Installing deployplane on a real kube-apiserver: `helm install`, `kubectl apply -k
manifests/`, the rendered operator pod admitted under the `restricted` Pod Security
Standard, and the chart's RBAC proven by making the operator's own calls with the
chart ServiceAccount's token (and being refused everything else).

There is no kubelet in the dev cluster: pods never run, so the objects themselves
(Deployment, pod spec, grants) are what is checked.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest
import yaml
from kubernetes import client, watch
from kubernetes.client.exceptions import ApiException
from tests.support import chart
from tests.support.e2e_fixture_types import ApplyManifest
from tests.support.e2ecluster import E2ECluster

from deployplane.devcluster.manifests import Applier
from deployplane.devcluster.serviceaccounts import request_token

ROOT = Path(__file__).resolve().parents[2]
CRDS = sorted((ROOT / "crds").glob("*.deployplane.io.yaml"))
GROUP, VERSION = "deployplane.io", "v1alpha1"
RESTRICTED = "pod-security.kubernetes.io/enforce"
T = TypeVar("T")


@pytest.fixture(scope="module")
def helm_bin() -> Path:
    try:
        return chart.helm_binary()
    except chart.HelmNotFound as e:
        pytest.fail(f"{e} (the dev cluster binaries are here, helm must be too)", pytrace=False)


@pytest.fixture(scope="module")
def kubectl_bin(dev_cluster: E2ECluster) -> Path:
    kubectl = dev_cluster.tools.kubectl
    if kubectl is None:
        pytest.fail("kubectl missing beside the dev cluster binaries", pytrace=False)
    return kubectl


def _run(argv: list[Any], *, check: bool = True) -> subprocess.CompletedProcess[str]:
    out = subprocess.run(
        [str(a) for a in argv], capture_output=True, text=True, timeout=120, check=False
    )
    if check:
        assert out.returncode == 0, f"{argv[:3]} failed:\n{out.stdout}\n{out.stderr}"
    return out


def _unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:6]}"


def _label_restricted(k8s_api: client.ApiClient, namespace: str) -> None:
    client.CoreV1Api(k8s_api).patch_namespace(
        namespace,
        {"metadata": {"labels": {RESTRICTED: "restricted", f"{RESTRICTED}-version": "latest"}}},
    )


def _eventually(call: Callable[[], T], timeout: float = 10.0) -> T:
    """RBAC reads bindings from an informer: a fresh grant can lag by milliseconds."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return call()
        except ApiException as e:
            if e.status != 403 or time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def _forbidden(call: Callable[[], object]) -> bool:
    try:
        call()
    except ApiException as e:
        if e.status == 403:
            return True
        raise
    return False


# ------------------------------------------------------------------------ helm


@pytest.fixture
def release(
    helm_bin: Path, kubeconfig: Path, namespace: str
) -> Iterator[Callable[..., subprocess.CompletedProcess[str]]]:
    """`helm install` into the test namespace; uninstalled afterwards (cluster-scoped
    RBAC included)."""
    installed: list[str] = []

    def install(name: str, *values: str) -> subprocess.CompletedProcess[str]:
        installed.append(name)
        sets = [a for v in values for a in ("--set-json", v)]
        return _run(
            [helm_bin, "install", name, chart.CHART, "--namespace", namespace,
             "--kubeconfig", kubeconfig, "--timeout", "60s", *sets]
        )  # fmt: skip

    yield install
    for name in installed:
        _run(
            [helm_bin, "uninstall", name, "--namespace", namespace, "--kubeconfig", kubeconfig],
            check=False,
        )


def test_helm_install_creates_the_operator(
    release: Callable[..., subprocess.CompletedProcess[str]],
    k8s_api: client.ApiClient,
    namespace: str,
) -> None:
    _label_restricted(k8s_api, namespace)
    name = _unique("dp")
    out = release(name, 'controlPlane={"url":"http://cp.example:8124","tenantId":"ws-1"}')
    assert "STATUS: deployed" in out.stdout
    # The apiserver checks a Deployment's pod template against the namespace's level
    # and warns; there must be nothing to warn about.
    assert "violate PodSecurity" not in out.stderr, out.stderr

    apps = client.AppsV1Api(k8s_api)
    deployment = apps.read_namespaced_deployment(name + "-deployplane", namespace)
    assert deployment.spec.replicas == 1
    container = deployment.spec.template.spec.containers[0]
    assert container.command == ["deployplane", "operator", "run"]
    env = {e.name: e.value for e in container.env}
    assert env["DEPLOYPLANE_CONTROL_PLANE_URL"] == "http://cp.example:8124"
    assert env["DEPLOYPLANE_TENANT_ID"] == "ws-1"
    core = client.CoreV1Api(k8s_api)
    assert core.read_namespaced_service_account(name + "-deployplane", namespace)
    assert core.read_namespaced_service(name + "-deployplane-metrics", namespace)
    rbac = client.RbacAuthorizationV1Api(k8s_api)
    assert rbac.read_cluster_role(name + "-deployplane").rules
    assert client.PolicyV1Api(k8s_api).read_namespaced_pod_disruption_budget(
        name + "-deployplane", namespace
    )
    crds = client.ApiextensionsV1Api(k8s_api)
    for crd in ("agentdeployments.deployplane.io", "listeners.deployplane.io"):
        assert crds.read_custom_resource_definition(crd)


def test_helm_install_with_two_replicas_creates_the_peering(
    release: Callable[..., subprocess.CompletedProcess[str]],
    k8s_api: client.ApiClient,
    namespace: str,
) -> None:
    name = _unique("dp")
    release(name, "replicaCount=2", f'watchNamespaces=["{namespace}"]')
    custom = client.CustomObjectsApi(k8s_api)
    peering = custom.get_namespaced_custom_object(
        "kopf.dev", "v1", namespace, "kopfpeerings", name + "-deployplane"
    )
    assert peering["metadata"]["name"] == name + "-deployplane"
    deployment = client.AppsV1Api(k8s_api).read_namespaced_deployment(
        name + "-deployplane", namespace
    )
    args = deployment.spec.template.spec.containers[0].args
    assert args[args.index("--peering") + 1] == name + "-deployplane"


def test_helm_install_with_peering_leaves_the_peering_crds_another_installed_alone(
    release: Callable[..., subprocess.CompletedProcess[str]],
    k8s_api: client.ApiClient,
    namespace: str,
) -> None:
    """The kopf.dev peering CRDs already in the cluster, applied by someone else (another
    Kopf operator, by hand): `helm install` with peering keeps them as they are instead
    of refusing to take them over, and its peering object is made."""
    rendered = chart.render({"replicaCount": 2})
    peering_crds = [
        d for d in chart.find_all(rendered, "CustomResourceDefinition")
        if d["metadata"]["name"].endswith(".kopf.dev")
    ]  # fmt: skip
    assert len(peering_crds) == 2
    for crd in peering_crds:
        crd["metadata"] = {"name": crd["metadata"]["name"], "labels": {"owner": "another"}}
    Applier(k8s_api).apply(peering_crds)
    name = _unique("dp")
    release(name, "replicaCount=2", f'watchNamespaces=["{namespace}"]')
    custom = client.CustomObjectsApi(k8s_api)
    assert custom.get_namespaced_custom_object(
        "kopf.dev", "v1", namespace, "kopfpeerings", name + "-deployplane"
    )
    extensions = client.ApiextensionsV1Api(k8s_api)
    for crd in peering_crds:
        kept = extensions.read_custom_resource_definition(crd["metadata"]["name"]).metadata
        # Not taken over by this release (an earlier test's release may own it already).
        assert (kept.labels or {}).get("owner") == "another", kept.labels
        assert (kept.annotations or {}).get("meta.helm.sh/release-name") != name


def test_helm_install_with_the_emulator(
    release: Callable[..., subprocess.CompletedProcess[str]],
    k8s_api: client.ApiClient,
    namespace: str,
) -> None:
    _label_restricted(k8s_api, namespace)
    name = _unique("dp")
    out = release(name, 'emulator={"enabled":true}')
    assert "violate PodSecurity" not in out.stderr, out.stderr
    core = client.CoreV1Api(k8s_api)
    secret = core.read_namespaced_secret(name + "-deployplane-emulator-api-key", namespace)
    assert secret.data["api-key"]
    assert core.read_namespaced_service(name + "-deployplane-emulator", namespace)


# ------------------------------------------------------------- pod security


def _bare_pods(docs: list[chart.Doc]) -> Iterator[dict[str, Any]]:
    for d in chart.find_all(docs, "Deployment"):
        template = d["spec"]["template"]
        yield {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": d["metadata"]["name"], "labels": template["metadata"]["labels"]},
            "spec": template["spec"],
        }


def test_rendered_pods_are_admitted_in_a_restricted_namespace(
    k8s_api: client.ApiClient, namespace: str
) -> None:
    _label_restricted(k8s_api, namespace)
    core = client.CoreV1Api(k8s_api)
    docs = chart.render({"replicaCount": 2, "emulator": {"enabled": True}}, namespace=namespace)
    core.create_namespaced_service_account(
        namespace, {"metadata": {"name": chart.find(docs, "ServiceAccount")["metadata"]["name"]}}
    )
    pods = list(_bare_pods(docs))
    assert len(pods) == 2  # operator and emulator
    for pod in pods:
        created = core.create_namespaced_pod(namespace, pod, dry_run="All")
        assert created.metadata.name == pod["metadata"]["name"]

    # The control: the same pod without its security context is refused, so the
    # namespace really enforces `restricted`.
    weakened = yaml.safe_load(yaml.safe_dump(pods[0]))
    del weakened["spec"]["containers"][0]["securityContext"]
    with pytest.raises(ApiException) as refused:
        core.create_namespaced_pod(namespace, weakened, dry_run="All")
    assert refused.value.status == 403
    assert "violates PodSecurity" in str(refused.value.body)


# ------------------------------------------------------------------- kustomize


def test_kubectl_apply_k_manifests(
    kubectl_bin: Path, kubeconfig: Path, k8s_api: client.ApiClient
) -> None:
    try:
        first = _run([kubectl_bin, "--kubeconfig", kubeconfig, "apply", "-k", ROOT / "manifests"])
        assert "deployment.apps/deployplane created" in first.stdout, first.stdout
        assert "violate PodSecurity" not in first.stderr, first.stderr
        # Idempotent: applying again changes nothing.
        again = _run([kubectl_bin, "--kubeconfig", kubeconfig, "apply", "-k", ROOT / "manifests"])
        assert "deployment.apps/deployplane unchanged" in again.stdout, again.stdout

        namespace = client.CoreV1Api(k8s_api).read_namespace(chart.NAMESPACE)
        assert namespace.metadata.labels[RESTRICTED] == "restricted"
        deployment = client.AppsV1Api(k8s_api).read_namespaced_deployment(
            "deployplane", chart.NAMESPACE
        )
        assert deployment.spec.template.spec.service_account_name == "deployplane"
        assert client.RbacAuthorizationV1Api(k8s_api).read_cluster_role_binding("deployplane")
    finally:
        # Not the CRDs: other tests' resources may live in them.
        for kind, name in (
            ("namespace", chart.NAMESPACE),
            ("clusterrolebinding", "deployplane"),
            ("clusterrole", "deployplane"),
        ):
            _run(
                [kubectl_bin, "--kubeconfig", kubeconfig, "delete", kind, name,
                 "--ignore-not-found", "--wait=false"],
                check=False,
            )  # fmt: skip


def test_the_shards_overlay_renders_objects_the_apiserver_accepts(
    kubectl_bin: Path, kubeconfig: Path, k8s_api: client.ApiClient, namespace: str, tmp_path: Path
) -> None:
    """examples/kustomize/shards (docs/sharding.md): every object it renders passes the
    apiserver's validation (a server-side dry run), its namespaced objects moved to the
    test's namespace. The Kopf peering CRDs are applied for real first (as the chart
    installs them): the peering objects' dry run needs their kind."""
    docs = chart.kustomize(ROOT / "examples" / "kustomize" / "shards")
    Applier(k8s_api).apply([d for d in docs if d["metadata"]["name"].endswith(".kopf.dev")])
    rest = [d for d in docs if d["kind"] not in {"CustomResourceDefinition", "Namespace"}]
    for doc in rest:
        if doc["metadata"].get("namespace") == chart.NAMESPACE:
            doc["metadata"]["namespace"] = namespace
    rendered = tmp_path / "shards.yaml"
    rendered.write_text(yaml.safe_dump_all(rest))
    out = _run(
        [kubectl_bin, "--kubeconfig", kubeconfig, "apply", "--server-side", "--force-conflicts",
         "--dry-run=server", "--field-manager", "e2e-shards", "-f", rendered]
    )  # fmt: skip
    applied = set(out.stdout.split("\n"))
    for name in ("deployplane", "deployplane-shard-a", "deployplane-shard-b"):
        for kind in (
            "deployment.apps",
            "poddisruptionbudget.policy",
            "clusterkopfpeering.kopf.dev",
        ):
            assert f"{kind}/{name} serverside-applied (server dry run)" in applied, out.stdout
    assert len([line for line in applied if "serverside-applied" in line]) == len(rest)


# ------------------------------------------------------------------------ RBAC


def _agentdeployment(name: str) -> dict[str, Any]:
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "AgentDeployment",
        "metadata": {"name": name},
        "spec": {
            "source": "external_docker",
            "sourceConfig": {"listenerId": "9d4c6a1e-4b3f-4f8e-8a47-3b3c5a2e1f00"},
            "sourceRevisionConfig": {"imageUri": "registry.example.com/acme/bot:1.0.0"},
        },
    }


@pytest.fixture
def chart_identity(
    dev_cluster: E2ECluster,
    k8s_api: client.ApiClient,
    apply_manifest: ApplyManifest,
    namespace: str,
) -> Callable[..., client.ApiClient]:
    """Apply the chart's RBAC (as `helm template` renders it) and the CRDs, and return a
    client holding a TokenRequest token of the chart's ServiceAccount."""
    # Applied, not through apply_manifest: deleting the CRDs after the test would race
    # the next module's own apply of them with the CRD still terminating.
    Applier(k8s_api).apply([yaml.safe_load(crd.read_text()) for crd in CRDS])

    def make(values: dict[str, Any] | None = None) -> client.ApiClient:
        release = _unique("rbac")
        docs = chart.rbac_documents(values, release=release, namespace=namespace)
        apply_manifest(docs)
        sa = chart.find(docs, "ServiceAccount")["metadata"]["name"]
        return dev_cluster.api_client(token=request_token(k8s_api, namespace, sa))

    return make


def _event(namespace: str, obj: dict[str, Any]) -> dict[str, Any]:
    return {
        "metadata": {"generateName": "rbac-"},
        "involvedObject": {
            "apiVersion": obj["apiVersion"],
            "kind": obj["kind"],
            "name": obj["metadata"]["name"],
            "namespace": namespace,
            "uid": obj["metadata"]["uid"],
        },
        "reason": "Created",
        "message": "rbac test",
        "type": "Normal",
        "source": {"component": "deployplane"},
    }


def test_chart_service_account_can_make_the_operator_calls_and_no_others(
    chart_identity: Callable[..., client.ApiClient],
    apply_manifest: ApplyManifest,
    k8s_api: client.ApiClient,
    namespace: str,
) -> None:
    (obj,) = apply_manifest(_agentdeployment("rbac-probe"))
    apply_manifest(
        {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "llm-keys"},
         "stringData": {"openai": "sk-test"}}
    )  # fmt: skip
    with contextlib.closing(chart_identity()) as api:
        custom = client.CustomObjectsApi(api)
        core = client.CoreV1Api(api)

        # What Kopf and the reconciler do, cluster-wide.
        listed = _eventually(
            lambda: custom.list_cluster_custom_object(GROUP, VERSION, "agentdeployments")
        )
        assert "rbac-probe" in [i["metadata"]["name"] for i in listed["items"]]
        assert custom.list_cluster_custom_object(GROUP, VERSION, "listeners")["items"] is not None
        streamed = list(
            watch.Watch().stream(
                custom.list_cluster_custom_object, GROUP, VERSION, "agentdeployments",
                timeout_seconds=1,
            )
        )  # fmt: skip
        assert any(e["object"]["metadata"]["name"] == "rbac-probe" for e in streamed)
        custom.patch_namespaced_custom_object(
            GROUP, VERSION, namespace, "agentdeployments", "rbac-probe",
            {"metadata": {"finalizers": ["deployplane.io/finalizer"]}},
        )  # fmt: skip
        custom.patch_namespaced_custom_object_status(
            GROUP, VERSION, namespace, "agentdeployments", "rbac-probe",
            {"status": {"observedGeneration": 1}},
            _content_type="application/merge-patch+json",
        )  # fmt: skip
        custom.patch_namespaced_custom_object(
            GROUP, VERSION, namespace, "agentdeployments", "rbac-probe",
            {"metadata": {"finalizers": None}},
        )  # fmt: skip
        # The outputs' ConfigMap (spec.writeOutputsTo): read, created owned, patched.
        owner = {
            "apiVersion": obj["apiVersion"],
            "kind": obj["kind"],
            "name": "rbac-probe",
            "uid": obj["metadata"]["uid"],
            "controller": True,
            "blockOwnerDeletion": True,
        }
        core.create_namespaced_config_map(
            namespace, {"metadata": {"name": "rbac-outputs", "ownerReferences": [owner]},
                        "data": {"url": ""}}
        )  # fmt: skip
        assert core.read_namespaced_config_map("rbac-outputs", namespace).data == {"url": ""}
        core.patch_namespaced_config_map("rbac-outputs", namespace, {"data": {"url": "https://x"}})
        # What an apiserver enforcing owner references' permissions
        # (OwnerReferencesPermissionEnforcement; not on in the dev cluster) checks before
        # it lets that ownerReference set blockOwnerDeletion.
        review = client.AuthorizationV1Api(api).create_self_subject_access_review(
            {"spec": {"resourceAttributes": {
                "group": GROUP, "resource": "agentdeployments", "subresource": "finalizers",
                "verb": "update", "namespace": namespace, "name": "rbac-probe"}}}
        )  # fmt: skip
        assert review.status.allowed, review.status
        with pytest.raises(ApiException) as missing:
            custom.get_namespaced_custom_object(GROUP, VERSION, namespace, "listeners", "absent")
        assert missing.value.status == 404  # allowed to look, it just is not there
        secret = core.read_namespaced_secret("llm-keys", namespace)
        assert secret.data["openai"]
        # An API key Secret's in-use protection: put on, then taken off, by patches.
        protection = "deployplane.io/secret-protection"
        protect = {"metadata": {"finalizers": [protection], "labels": {protection: "true"}}}
        protected = core.patch_namespaced_secret("llm-keys", namespace, protect)
        assert protection in protected.metadata.finalizers
        released = core.patch_namespaced_secret(
            "llm-keys", namespace,
            [{"op": "test", "path": "/metadata/finalizers", "value": [protection]},
             {"op": "replace", "path": "/metadata/finalizers", "value": []},
             {"op": "remove", "path": "/metadata/labels/deployplane.io~1secret-protection"}],
        )  # fmt: skip
        assert not released.metadata.finalizers
        core.create_namespaced_event(namespace, _event(namespace, obj))
        client.EventsV1Api(api).create_namespaced_event(
            namespace,
            {
                "metadata": {"generateName": "rbac-"},
                # MicroTime: the client drops a zero fraction, which the apiserver refuses.
                "eventTime": dt.datetime.now(dt.UTC).replace(microsecond=123456),
                "reportingController": "deployplane.io/operator",
                "reportingInstance": "rbac-test",
                "action": "Reconcile",
                "reason": "Created",
                "type": "Normal",
                "regarding": {
                    "apiVersion": obj["apiVersion"], "kind": obj["kind"],
                    "name": "rbac-probe", "namespace": namespace,
                },
            },
        )  # fmt: skip
        crds = client.ApiextensionsV1Api(api).list_custom_resource_definition()
        assert {c.metadata.name for c in crds.items} >= {
            "agentdeployments.deployplane.io",
            "listeners.deployplane.io",
        }

        # And nothing more.
        refused: dict[str, Callable[[], object]] = {
            "list secrets": lambda: core.list_namespaced_secret(namespace),
            "delete secret": lambda: core.delete_namespaced_secret("llm-keys", namespace),
            "create secret": lambda: core.create_namespaced_secret(
                namespace, {"metadata": {"name": "x"}, "stringData": {"a": "b"}}
            ),
            "create agentdeployment": lambda: custom.create_namespaced_custom_object(
                GROUP, VERSION, namespace, "agentdeployments", _agentdeployment("nope")
            ),
            "delete agentdeployment": lambda: custom.delete_namespaced_custom_object(
                GROUP, VERSION, namespace, "agentdeployments", "rbac-probe"
            ),
            "replace spec": lambda: custom.replace_namespaced_custom_object(
                GROUP, VERSION, namespace, "agentdeployments", "rbac-probe", obj
            ),
            "list pods": lambda: core.list_namespaced_pod(namespace),
            "delete events": lambda: core.delete_collection_namespaced_event(namespace),
            "list namespaces": lambda: core.list_namespace(),
            "list configmaps": lambda: core.list_namespaced_config_map(namespace),
            "delete configmap": lambda: core.delete_namespaced_config_map(
                "rbac-outputs", namespace
            ),
        }
        allowed = [what for what, call in refused.items() if not _forbidden(call)]
        assert not allowed, f"the chart's ServiceAccount may also: {allowed}"


def test_namespaced_install_is_confined_to_its_namespaces(
    chart_identity: Callable[..., client.ApiClient],
    apply_manifest: ApplyManifest,
    k8s_api: client.ApiClient,
    namespace: str,
) -> None:
    core_admin = client.CoreV1Api(k8s_api)
    other = _unique("e2e-other")
    core_admin.create_namespace(
        {"metadata": {"name": other, "labels": {"deployplane.io/e2e": "true"}}}
    )
    try:
        apply_manifest(_agentdeployment("inside"))
        secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"},
                  "stringData": {"k": "v"}}  # fmt: skip
        apply_manifest(secret)
        apply_manifest(secret, namespace=other)
        with contextlib.closing(chart_identity({"watchNamespaces": [namespace]})) as api:
            custom = client.CustomObjectsApi(api)
            core = client.CoreV1Api(api)
            inside = _eventually(
                lambda: custom.list_namespaced_custom_object(
                    GROUP, VERSION, namespace, "agentdeployments"
                )
            )
            assert [i["metadata"]["name"] for i in inside["items"]] == ["inside"]
            assert core.read_namespaced_secret("s", namespace).data["k"]
            assert core.list_namespace().items  # Kopf follows namespaces when namespaced
            assert _forbidden(
                lambda: custom.list_cluster_custom_object(GROUP, VERSION, "agentdeployments")
            )
            assert _forbidden(lambda: core.read_namespaced_secret("s", other))
            assert _forbidden(
                lambda: custom.list_namespaced_custom_object(
                    GROUP, VERSION, other, "agentdeployments"
                )
            )
    finally:
        with contextlib.suppress(ApiException):
            core_admin.delete_namespace(other)
