"""The real node's chart values (examples/helm/real-node-values.yaml), rendered by the
real `helm template`, alone (the real-node tier's helm tests: the emulator a pod whose
built-in data plane runs the example with no listener) and with the overrides
`make demo REAL_NODE=1` builds in code (the emulator on the host: the chart's off, the
operator and agent pointed at it with the demo's key); what the demo assumes of them
and of the examples: the images are the ones `make images` builds, the listener agent
is the example Listener's; and the host emulator's config and environment.

That the release runs (pods Ready, the example DEPLOYED as real containers, faults) is
proven in tests/e2e/test_realnode_helm.py, on these values; the demo, with
`langgraph deploy --remote` to its emulator, in tests/e2e/test_demo_realnode.py.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from tests.support import chart, realnode
from tests.support.chart import env_of, find, find_all
from tests.support.image_recipes import recipes  # what `make images` builds

from deployplane.demo import realnode as demo_realnode
from deployplane.demo import steps
from deployplane.devcluster.realnode import script
from deployplane.emulator.settings import parse_config

ROOT = Path(__file__).resolve().parents[3]
VALUES = ROOT / demo_realnode.VALUES
HOST_URL = f"http://{demo_realnode.EMULATOR_HOST}:41234"


@pytest.fixture(scope="module")
def docs() -> list[dict[str, Any]]:
    chart.require_helm()
    values = yaml.safe_load(VALUES.read_text())
    values["watchNamespaces"] = [steps.NAMESPACE]
    values["listenerAgent"]["listenerNamespace"] = steps.NAMESPACE
    return chart.render(
        values, release=demo_realnode.RELEASE, namespace=demo_realnode.RELEASE_NAMESPACE
    )


@pytest.fixture(scope="module")
def demo_docs(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    """As `demo up --real-node` installs it: VALUES, then the overrides built in code."""
    chart.require_helm()
    overrides = tmp_path_factory.mktemp("demo-values") / "values.json"
    overrides.write_text(json.dumps(demo_realnode.chart_overrides(steps.NAMESPACE, HOST_URL)))
    out = chart.helm(
        "template", demo_realnode.RELEASE, str(chart.CHART),
        "--namespace", demo_realnode.RELEASE_NAMESPACE,
        "-f", str(VALUES), "-f", str(overrides),
    )  # fmt: skip
    return chart.parse_documents(out.stdout)


def _example(name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load((ROOT / "examples" / name).read_text())
    return loaded


def _built_refs() -> set[str]:
    return {ref for image in recipes.DATAPLANE for ref in (image.ref, *image.also)}


def test_helm_lint_is_clean_with_the_real_node_values() -> None:
    chart.require_helm()
    out = chart.helm("lint", "--strict", str(chart.CHART), "--values", str(VALUES), check=False)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "[WARNING]" not in out.stdout, out.stdout


def test_every_pod_runs_the_imported_image_never_pulled(docs: list[dict[str, Any]]) -> None:
    deployments = find_all(docs, "Deployment")
    assert len(deployments) == 3  # operator, emulator, listener agent
    for deployment in deployments:
        spec = deployment["spec"]["template"]["spec"]
        for container in spec["containers"]:
            assert container["image"] == realnode.APP_TAG, container["name"]
            assert container["imagePullPolicy"] == "Never", container["name"]
    operator = chart.operator_deployment(docs)
    assert operator["spec"]["replicas"] == 2
    assert "--peering" in chart.operator_container(docs)["args"]


def test_the_agent_is_the_example_listeners_with_the_local_images(
    docs: list[dict[str, Any]],
) -> None:
    listener = _example("listener.yaml")
    agent = find(docs, "Deployment", f"{demo_realnode.RELEASE}-listener-agent")
    container = agent["spec"]["template"]["spec"]["containers"][0]
    assert container["args"] == [
        "--listener",
        listener["metadata"]["name"],
        "--namespace",
        steps.NAMESPACE,
        "--liveness",
        "http://0.0.0.0:8080/healthz",
        "--readiness",
        "http://0.0.0.0:8081/readyz",
    ]
    env = env_of(container)
    assert env["DEPLOYPLANE_POSTGRES_IMAGE"] == realnode.POSTGRES_IMAGE
    assert env["DEPLOYPLANE_REDIS_IMAGE"] == realnode.REDIS_IMAGE
    assert {env["DEPLOYPLANE_POSTGRES_IMAGE"], env["DEPLOYPLANE_REDIS_IMAGE"]} <= _built_refs()
    roles = {r["metadata"]["namespace"] for r in find_all(docs, "Role")}
    namespaces = listener["spec"]["computeConfig"]["k8sNamespaces"]
    assert set(namespaces) <= roles
    assert namespaces == [steps.AGENTS_NAMESPACE]


def test_alone_the_operator_uses_the_in_cluster_emulators_service(
    docs: list[dict[str, Any]],
) -> None:
    service = find(docs, "Service", f"{demo_realnode.RELEASE}-emulator")
    (port,) = service["spec"]["ports"]
    url = f"http://{service['metadata']['name']}.{demo_realnode.RELEASE_NAMESPACE}.svc:"
    env = env_of(chart.operator_container(docs))
    assert env["DEPLOYPLANE_CONTROL_PLANE_URL"] == f"{url}{port['port']}"


def test_the_demo_installs_no_emulator_and_points_both_servers_at_the_hosts(
    demo_docs: list[dict[str, Any]],
) -> None:
    deployments = find_all(demo_docs, "Deployment")
    names = {d["metadata"]["name"] for d in deployments}
    assert names == {demo_realnode.RELEASE, f"{demo_realnode.RELEASE}-listener-agent"}
    assert not [d for d in demo_docs if "emulator" in d["metadata"]["name"]]
    key = {"secretKeyRef": {"name": demo_realnode.KEY_SECRET, "key": "api-key"}}
    for deployment in deployments:
        spec = deployment["spec"]["template"]["spec"]
        (container,) = spec["containers"]
        assert container["image"] == realnode.APP_TAG
        assert container["imagePullPolicy"] == "Never"
        env = env_of(container)
        assert env["DEPLOYPLANE_CONTROL_PLANE_URL"] == HOST_URL, deployment["metadata"]["name"]
        assert env["DEPLOYPLANE_API_KEY"] == key, deployment["metadata"]["name"]
    agent = find(demo_docs, "Deployment", f"{demo_realnode.RELEASE}-listener-agent")
    env = env_of(agent["spec"]["template"]["spec"]["containers"][0])
    assert env["DEPLOYPLANE_POSTGRES_IMAGE"] == realnode.POSTGRES_IMAGE
    assert chart.operator_deployment(demo_docs)["spec"]["replicas"] == 2


def test_the_node_s_pods_may_reach_the_host_emulator_s_address() -> None:
    # The egress guard returns (lets through) this destination: the operator's and the
    # agent's pods reach the emulator on the host's end of the veth.
    assert f"{demo_realnode.EMULATOR_HOST}/32" in script.GUARD_ALLOWED


def test_the_host_emulator_builds_real_images_into_the_demo_s_node(tmp_path: Path) -> None:
    base = yaml.safe_load((ROOT / demo_realnode.EMULATOR_CONFIG).read_text())
    config = parse_config(demo_realnode.emulator_config(base, tmp_path / "cluster"))
    assert config.image_builds is not None
    assert config.image_builds.load_into_dev_cluster == tmp_path / "cluster"
    assert config.workspaces[0].api_keys == [demo_realnode.DEMO_API_KEY]
    assert str(config.workspaces[0].id) == steps.TENANT
    assert "image_builds" not in base  # the kwok demo's is unchanged


def test_the_host_emulators_data_plane_uses_the_local_images(tmp_path: Path) -> None:
    env = demo_realnode.emulator_env(tmp_path / "kubeconfig", yaml.safe_load(VALUES.read_text()))
    assert env == {
        "KUBECONFIG": str(tmp_path / "kubeconfig"),
        "DEPLOYPLANE_POSTGRES_IMAGE": realnode.POSTGRES_IMAGE,
        "DEPLOYPLANE_REDIS_IMAGE": realnode.REDIS_IMAGE,
    }
    assert {env["DEPLOYPLANE_POSTGRES_IMAGE"], env["DEPLOYPLANE_REDIS_IMAGE"]} <= _built_refs()


def test_every_example_image_has_a_stand_in_that_make_images_builds() -> None:
    image = _example("agentdeployment-docker.yaml")["spec"]["sourceRevisionConfig"]["imageUri"]
    assert set(demo_realnode.STAND_INS) == {image}
    assert set(demo_realnode.STAND_INS.values()) <= _built_refs()
    # The git example's image is its simulated build's, tagged once its commit is known.
    assert _example("agentdeployment-git.yaml")["spec"]["source"] == "git_host"
    assert demo_realnode.BUILT_STAND_IN in _built_refs()


def test_alone_the_emulator_pod_runs_the_listenerless_example_in_the_agents_namespace(
    docs: list[dict[str, Any]],
) -> None:
    git = _example("agentdeployment-git.yaml")["spec"]["sourceConfig"]
    assert not {"listenerRef", "listenerId"} & set(git)  # the built-in data plane's
    emulator = find(docs, "Deployment", f"{demo_realnode.RELEASE}-emulator")
    pod = emulator["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    args = container["args"]
    assert args[args.index("--builtin-dataplane") + 1] == steps.AGENTS_NAMESPACE
    env = env_of(container)
    assert env["DEPLOYPLANE_POSTGRES_IMAGE"] == realnode.POSTGRES_IMAGE
    assert env["DEPLOYPLANE_REDIS_IMAGE"] == realnode.REDIS_IMAGE
    # The in-cluster credentials of its own ServiceAccount, a Role in `agents` only.
    assert pod["serviceAccountName"] == f"{demo_realnode.RELEASE}-emulator"
    assert pod["automountServiceAccountToken"] is True
    binding = find(docs, "RoleBinding", f"{demo_realnode.RELEASE}-emulator")
    assert binding["metadata"]["namespace"] == steps.AGENTS_NAMESPACE
    assert binding["subjects"][0]["name"] == pod["serviceAccountName"]
