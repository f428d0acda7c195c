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


def test_same_metrics_service_disruption_budget_and_network_policy(
    both: tuple[list[Doc], list[Doc]],
) -> None:
    helm_docs, kustomized = both
    for kind in ("Service", "PodDisruptionBudget", "NetworkPolicy"):
        assert find(kustomized, kind)["spec"] == find(helm_docs, kind)["spec"], kind


# ------------------------------------------------------------- the shards overlay

SHARDS_OVERLAY = chart.ROOT / "examples" / "kustomize" / "shards"
SHARD_VALUES = {"replicaCount": 2, "shards": ["a", "b"]}
INSTANCES = {
    "deployplane": ["--shard-default", "--peering", "deployplane"],
    "deployplane-shard-a": ["--shard", "a", "--peering", "deployplane-shard-a"],
    "deployplane-shard-b": ["--shard", "b", "--peering", "deployplane-shard-b"],
}


@pytest.fixture(scope="module")
def sharded(both: tuple[list[Doc], list[Doc]]) -> tuple[list[Doc], list[Doc]]:
    """The chart with two shards of HA pairs, and the kustomize overlay that says so."""
    return chart.render(SHARD_VALUES), chart.kustomize(SHARDS_OVERLAY)


def _by_name(docs: list[Doc], kind: str) -> dict[str, Doc]:
    return {d["metadata"]["name"]: d for d in find_all(docs, kind)}


def test_the_shards_overlay_has_the_charts_instances_budgets_and_peering_objects(
    sharded: tuple[list[Doc], list[Doc]],
) -> None:
    helm_docs, overlay = sharded
    for kind in ("Deployment", "PodDisruptionBudget"):
        deployments = _by_name(overlay, kind)
        assert sorted(deployments) == sorted(INSTANCES), kind
        assert {d["metadata"]["namespace"] for d in deployments.values()} == {chart.NAMESPACE}
    peering = _by_name(overlay, "ClusterKopfPeering")
    assert sorted(peering) == sorted(INSTANCES)
    assert all("namespace" not in d["metadata"] for d in peering.values()), "cluster-scoped"
    assert sorted(peering) == sorted(_by_name(helm_docs, "ClusterKopfPeering"))
    theirs = {d["metadata"]["name"]: d for d in find_all(helm_docs, "CustomResourceDefinition")}
    for name, crd in _by_name(overlay, "CustomResourceDefinition").items():
        if name.endswith(".kopf.dev"):
            assert crd["spec"] == theirs[name]["spec"], name
    assert {n for n in theirs if n.endswith(".kopf.dev")} <= set(
        _by_name(overlay, "CustomResourceDefinition")
    )
    rules = find(overlay, "ClusterRole")["rules"]
    assert rules == find(helm_docs, "ClusterRole")["rules"], "peering needs its grant"
    assert {"apiGroups": ["kopf.dev"], "resources": ["clusterkopfpeerings"]}.items() <= (
        rules[-1].items()
    )


def test_each_overlay_instance_runs_as_the_charts_with_its_shard_and_peering(
    sharded: tuple[list[Doc], list[Doc]],
) -> None:
    helm_docs, overlay = sharded
    ours, theirs = _by_name(overlay, "Deployment"), _by_name(helm_docs, "Deployment")
    ours_pdb, theirs_pdb = (
        _by_name(overlay, "PodDisruptionBudget"),
        _by_name(helm_docs, "PodDisruptionBudget"),
    )
    (config_map,) = find_all(overlay, "ConfigMap")
    for name, shard_args in INSTANCES.items():
        deployment, chart_deployment = ours[name], theirs[name]
        for key in ("replicas", "strategy", "selector"):
            assert deployment["spec"][key] == chart_deployment["spec"][key], (name, key)
        assert deployment["spec"]["replicas"] == 2
        pod = deployment["spec"]["template"]
        labels = pod["metadata"]["labels"]
        shard = labels.get("deployplane.io/shard")
        assert shard == (None if name == "deployplane" else name[-1])
        assert deployment["metadata"]["labels"].get("deployplane.io/shard") == shard
        assert labels == chart_deployment["spec"]["template"]["metadata"]["labels"]
        assert deployment["spec"]["selector"]["matchLabels"].items() <= labels.items()
        (container,) = pod["spec"]["containers"]
        (chart_container,) = chart_deployment["spec"]["template"]["spec"]["containers"]
        assert container["args"] == chart_container["args"], name
        assert container["args"][5:] == [*shard_args, "--peering-lifetime", "30"]
        # Every instance reads the base's configuration (its generated, hashed name).
        assert container["envFrom"] == [
            {"configMapRef": {"name": config_map["metadata"]["name"]}}
        ], name
        assert ours_pdb[name]["spec"] == theirs_pdb[name]["spec"], name


def test_the_base_is_unchanged_by_the_overlay(both: tuple[list[Doc], list[Doc]]) -> None:
    """The base stays one unsharded instance without peering (the chart's defaults)."""
    _, kustomized = both
    (deployment,) = find_all(kustomized, "Deployment")
    args = deployment["spec"]["template"]["spec"]["containers"][0]["args"]
    assert not {"--shard", "--shard-default", "--peering"} & set(args)
    assert not find_all(kustomized, "ClusterKopfPeering")
