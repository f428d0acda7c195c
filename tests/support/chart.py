"""Render the Helm chart (`helm template`) and pick documents out of it.

Shared by the chart unit tests and the end-to-end tests: `rbac_documents()` gives the
exact ServiceAccount / ClusterRole / Role / bindings a release would install, so a test
can apply them on the dev cluster and run the operator with that identity alone.

helm is one of the tools built by `tools/k8s/build.sh`; `helm_binary()` finds it the
same way the dev cluster finds its binaries (DEPLOYPLANE_TOOLS_BIN, the build script's
cache, PATH).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml

from deployplane.devcluster import ToolsNotFound, find_tools

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "charts" / "deployplane"
MANIFESTS = ROOT / "manifests"
RELEASE = "deployplane"
NAMESPACE = "deployplane-system"
RBAC_KINDS = frozenset(
    {"ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"}
)

Doc = dict[str, Any]


class _StrictLoader(yaml.SafeLoader):
    """Refuses a mapping with a repeated key: PyYAML keeps the last one silently, the
    apiserver's decoder refuses it, so a template bug would only show in a cluster."""


def _strict_mapping(loader: _StrictLoader, node: yaml.MappingNode) -> dict[Any, Any]:
    keys = [loader.construct_object(key) for key, _ in node.value]
    repeated = {k for k in keys if keys.count(k) > 1}
    if repeated:
        raise yaml.constructor.ConstructorError(
            None, None, f"repeated keys {sorted(map(str, repeated))}", node.start_mark
        )
    return yaml.SafeLoader.construct_mapping(loader, node)


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _strict_mapping)


def parse_documents(text: str) -> list[Doc]:
    return [doc for doc in yaml.load_all(text, Loader=_StrictLoader) if doc]


class HelmNotFound(RuntimeError):
    """No helm binary: build it with `make tools`."""


def helm_binary() -> Path:
    try:
        tools = find_tools()
    except ToolsNotFound:
        tools = None
    if tools is not None and tools.helm is not None:
        return tools.helm
    on_path = shutil.which("helm")
    if on_path:
        return Path(on_path)
    raise HelmNotFound("helm not found: build it with `make tools` (tools/k8s/build.sh helm)")


def require_helm() -> None:
    """Skip the calling test without helm, except in CI, where a missing tool is a
    failure (a skip there would hide that the chart went untested)."""
    try:
        helm_binary()
    except HelmNotFound as e:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(str(e), pytrace=False)
        pytest.skip(str(e))


def kubectl_binary() -> Path | None:
    try:
        tools = find_tools()
    except ToolsNotFound:
        tools = None
    if tools is not None and tools.kubectl is not None:
        return tools.kubectl
    on_path = shutil.which("kubectl")
    return Path(on_path) if on_path else None


def helm(*args: str, check: bool = True, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(helm_binary()), *args], capture_output=True, text=True, timeout=timeout, check=check
    )


def _values_file(values: Mapping[str, Any], directory: str) -> str:
    path = Path(directory) / "values.yaml"
    path.write_text(json.dumps(dict(values)))  # JSON is YAML
    return str(path)


def template_command(
    values: Mapping[str, Any] | None = None,
    *,
    release: str = RELEASE,
    namespace: str = NAMESPACE,
    values_dir: str,
    extra: Iterable[str] = (),
) -> list[str]:
    args = ["template", release, str(CHART), "--namespace", namespace, *extra]
    if values:
        args += ["--values", _values_file(values, values_dir)]
    return args


def render(
    values: Mapping[str, Any] | None = None,
    *,
    release: str = RELEASE,
    namespace: str = NAMESPACE,
    include_crds: bool = False,
) -> list[Doc]:
    """The documents `helm template` renders (hooks included), CRDs only if asked."""
    with tempfile.TemporaryDirectory() as tmp:
        extra = ["--include-crds"] if include_crds else []
        out = helm(
            *template_command(
                values, release=release, namespace=namespace, values_dir=tmp, extra=extra
            )
        )
    return parse_documents(out.stdout)


def render_error(values: Mapping[str, Any]) -> str:
    """helm's error output for values it must refuse ("" if it rendered)."""
    with tempfile.TemporaryDirectory() as tmp:
        out = helm(*template_command(values, values_dir=tmp), check=False)
    return "" if out.returncode == 0 else out.stderr


def rbac_documents(
    values: Mapping[str, Any] | None = None,
    *,
    release: str = RELEASE,
    namespace: str = NAMESPACE,
) -> list[Doc]:
    """ServiceAccount, (Cluster)Roles and bindings of a release, ready to apply."""
    return [
        doc
        for doc in render(values, release=release, namespace=namespace)
        if doc["kind"] in RBAC_KINDS
    ]


def find(docs: Iterable[Doc], kind: str, name: str | None = None) -> Doc:
    matches = [
        d for d in docs if d["kind"] == kind and (name is None or d["metadata"]["name"] == name)
    ]
    assert len(matches) == 1, f"{len(matches)} {kind} {name or ''} in the rendered chart"
    return matches[0]


def find_all(docs: Iterable[Doc], kind: str) -> list[Doc]:
    return [d for d in docs if d["kind"] == kind]


def operator_deployment(docs: Iterable[Doc]) -> Doc:
    deployments = [
        d
        for d in find_all(docs, "Deployment")
        if d["spec"]["template"]["metadata"]["labels"].get("app.kubernetes.io/component")
        == "operator"
    ]
    assert len(deployments) == 1, deployments
    return deployments[0]


def operator_container(docs: Iterable[Doc]) -> Doc:
    containers: list[Doc] = operator_deployment(docs)["spec"]["template"]["spec"]["containers"]
    return next(c for c in containers if c["name"] == "operator")


def env_of(container: Doc) -> dict[str, Any]:
    """name -> value, or the valueFrom mapping for references."""
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in container.get("env", [])}


def kustomize(directory: Path = MANIFESTS) -> list[Doc]:
    """`kubectl kustomize` of a directory."""
    kubectl = kubectl_binary()
    if kubectl is None:
        raise HelmNotFound("kubectl not found: build it with `make tools`")
    out = subprocess.run(
        [str(kubectl), "kustomize", str(directory)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return parse_documents(out.stdout)


@contextlib.contextmanager
def release(
    cluster: Any,
    run_id: str,
    image: str,
    pull_policy: str = "IfNotPresent",
    extra: Mapping[str, Any] | None = None,
) -> Iterator[dict[str, str]]:
    """The chart installed with the in-cluster emulator in a namespace of its own
    (`deployplane-e2e-<run_id>`), watching only that namespace; uninstalled, and its
    namespace deleted, on exit. `cluster`: an E2ECluster (kubeconfig, admin());
    `extra`: more top-level values (`--set-json key=value` each)."""
    from kubernetes import client
    from kubernetes.client.exceptions import ApiException

    namespace = f"deployplane-e2e-{run_id}"
    name = f"dp-{run_id}"
    repository, _, tag = image.rpartition(":")
    values = [
        f'watchNamespaces=["{namespace}"]',
        'emulator={"enabled": true}',
        f'image={{"repository": "{repository}", "tag": "{tag}", "pullPolicy": "{pull_policy}"}}',
        *(f"{key}={json.dumps(value)}" for key, value in (extra or {}).items()),
    ]
    kubeconfig = str(cluster.kubeconfig)
    sets = [arg for value in values for arg in ("--set-json", value)]
    helm(
        "install", name, str(CHART), "--namespace", namespace, "--create-namespace",
        "--kubeconfig", kubeconfig, *sets, timeout=180,
    )  # fmt: skip
    try:
        yield {"name": name, "namespace": namespace}
    finally:
        helm("uninstall", name, "--namespace", namespace, "--kubeconfig", kubeconfig,
             check=False, timeout=180)  # fmt: skip
        with cluster.admin() as api, contextlib.suppress(ApiException):
            client.CoreV1Api(api).delete_namespace(namespace)
