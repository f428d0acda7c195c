"""manifests/ (the kustomize base) is the chart's defaults in another form: same RBAC,
same pod, same configuration. Rendered by the real `kubectl kustomize` and `helm
template`; `kubectl apply -k manifests/` itself runs in tests/e2e/test_install.py."""

from __future__ import annotations

import os
from typing import Any

import pytest
from tests.support import chart
from tests.support.chart import Doc, find, find_all, operator_container, operator_deployment


@pytest.fixture(scope="module")
def both() -> tuple[list[Doc], list[Doc]]:
    try:
        chart.helm_binary()
        if chart.kubectl_binary() is None:
            raise chart.HelmNotFound("kubectl not found: build it with `make tools`")
    except chart.HelmNotFound as e:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(str(e), pytrace=False)
        pytest.skip(str(e))
    return chart.render(include_crds=True), chart.kustomize()


def _env(container: Doc, docs: list[Doc]) -> dict[str, Any]:
    """The environment the container gets, ConfigMap references resolved, empty values
    dropped (the operator reads an empty variable as unset)."""
    env: dict[str, Any] = {}
    for source in container.get("envFrom", []):
        name = source["configMapRef"]["name"]
        (config_map,) = [
            d
            for d in find_all(docs, "ConfigMap")
            if d["metadata"]["name"] == name or d["metadata"]["name"].startswith(f"{name}-")
        ]
        env.update(config_map["data"])
    for e in container.get("env", []):
        env[e["name"]] = e.get("value", e.get("valueFrom"))
    return {k: v for k, v in env.items() if v != ""}


def test_same_objects_in_the_same_namespace(both: tuple[list[Doc], list[Doc]]) -> None:
    helm_docs, kustomized = both

    def identity(docs: list[Doc]) -> set[tuple[str, str, str | None]]:
        return {
            (d["kind"], d["metadata"]["name"], d["metadata"].get("namespace"))
            for d in docs
            if d["kind"] not in {"Namespace", "ConfigMap"}
        }

    assert identity(kustomized) == identity(helm_docs)
    assert find(kustomized, "Namespace")["metadata"]["name"] == chart.NAMESPACE


def test_same_crds(both: tuple[list[Doc], list[Doc]]) -> None:
    helm_docs, kustomized = both
    for crd in find_all(helm_docs, "CustomResourceDefinition"):
        ours = find(kustomized, "CustomResourceDefinition", crd["metadata"]["name"])
        assert ours["spec"] == crd["spec"]


def test_same_rbac(both: tuple[list[Doc], list[Doc]]) -> None:
    helm_docs, kustomized = both
    assert find(kustomized, "ClusterRole")["rules"] == find(helm_docs, "ClusterRole")["rules"]
    for kind in ("ClusterRoleBinding",):
        ours, theirs = find(kustomized, kind), find(helm_docs, kind)
        assert (ours["roleRef"], ours["subjects"]) == (theirs["roleRef"], theirs["subjects"])


def test_same_operator_pod(both: tuple[list[Doc], list[Doc]]) -> None:
    helm_docs, kustomized = both
    ours, theirs = operator_deployment(kustomized), operator_deployment(helm_docs)
    for key in ("replicas", "strategy", "selector"):
        assert ours["spec"][key] == theirs["spec"][key], key
    ours_pod, theirs_pod = ours["spec"]["template"]["spec"], theirs["spec"]["template"]["spec"]
    for key in ("serviceAccountName", "securityContext", "volumes"):
        assert ours_pod[key] == theirs_pod[key], key
    c_ours, c_theirs = operator_container(kustomized), operator_container(helm_docs)
    for key in (
        "image",
        "command",
        "args",
        "ports",
        "livenessProbe",
        "readinessProbe",
        "resources",
        "securityContext",
        "volumeMounts",
    ):
        assert c_ours[key] == c_theirs[key], key
    env_ours, env_theirs = _env(c_ours, kustomized), _env(c_theirs, helm_docs)
    # The base reads the API key from a fixed Secret name, optional until it exists; the
    # chart only references a Secret it is told about.
    assert env_ours.pop("DEPLOYPLANE_API_KEY") == {
        "secretKeyRef": {"name": "deployplane-api-key", "key": "api-key", "optional": True}
    }
    assert env_ours == env_theirs


def test_same_metrics_service_and_disruption_budget(both: tuple[list[Doc], list[Doc]]) -> None:
    helm_docs, kustomized = both
    for kind in ("Service", "PodDisruptionBudget"):
        assert find(kustomized, kind)["spec"] == find(helm_docs, kind)["spec"], kind
