"""`make demo REAL_NODE=1`'s chart values (examples/helm/real-node-values.yaml), rendered
by the real `helm template`, and what the demo assumes of them and of the examples: the
images are the ones `make images` builds, the listener agent is the example Listener's,
the emulator's Service is where the example connection points, and the emulator's
built-in data plane runs the example with no listener in the same namespace.

That the release runs (pods Ready, the example DEPLOYED as real containers, faults) is
proven in tests/e2e/test_realnode_helm.py, on these values; the demo itself was run by
hand (docs/benchmarks.md).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from tests.support import chart, realnode
from tests.support.chart import env_of, find, find_all
from tests.unit.test_images_recipes import recipes  # what `make images` builds

from deployplane import demo, demo_realnode

ROOT = Path(__file__).resolve().parents[2]
VALUES = ROOT / demo_realnode.VALUES


@pytest.fixture(scope="module")
def docs() -> list[dict[str, Any]]:
    chart.require_helm()
    values = yaml.safe_load(VALUES.read_text())
    values["watchNamespaces"] = [demo.NAMESPACE]
    values["listenerAgent"]["listenerNamespace"] = demo.NAMESPACE
    return chart.render(
        values, release=demo_realnode.RELEASE, namespace=demo_realnode.RELEASE_NAMESPACE
    )


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
        demo.NAMESPACE,
    ]
    env = env_of(container)
    assert env["DEPLOYPLANE_POSTGRES_IMAGE"] == realnode.POSTGRES_IMAGE
    assert env["DEPLOYPLANE_REDIS_IMAGE"] == realnode.REDIS_IMAGE
    assert {env["DEPLOYPLANE_POSTGRES_IMAGE"], env["DEPLOYPLANE_REDIS_IMAGE"]} <= _built_refs()
    roles = {r["metadata"]["namespace"] for r in find_all(docs, "Role")}
    namespaces = listener["spec"]["computeConfig"]["k8sNamespaces"]
    assert set(namespaces) <= roles
    assert namespaces == [demo.AGENTS_NAMESPACE]


def test_the_example_connection_points_at_the_emulators_service(
    docs: list[dict[str, Any]],
) -> None:
    service = find(docs, "Service", f"{demo_realnode.RELEASE}-emulator")
    (port,) = service["spec"]["ports"]
    url = demo_realnode.in_cluster_url()
    assert url == (
        f"http://{service['metadata']['name']}.{demo_realnode.RELEASE_NAMESPACE}.svc:{port['port']}"
    )
    env = env_of(chart.operator_container(docs))
    assert env["DEPLOYPLANE_CONTROL_PLANE_URL"] == url


def test_every_example_image_has_a_stand_in_that_make_images_builds() -> None:
    image = _example("agentdeployment-docker.yaml")["spec"]["sourceRevisionConfig"]["imageUri"]
    assert set(demo_realnode.STAND_INS) == {image}
    assert set(demo_realnode.STAND_INS.values()) <= _built_refs()
    # The git example's image is its simulated build's, tagged once its commit is known.
    assert _example("agentdeployment-git.yaml")["spec"]["source"] == "git_host"
    assert demo_realnode.BUILT_STAND_IN in _built_refs()


def test_the_emulator_runs_the_listenerless_example_in_the_agents_namespace(
    docs: list[dict[str, Any]],
) -> None:
    git = _example("agentdeployment-git.yaml")["spec"]["sourceConfig"]
    assert not {"listenerRef", "listenerId"} & set(git)  # the built-in data plane's
    emulator = find(docs, "Deployment", f"{demo_realnode.RELEASE}-emulator")
    pod = emulator["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    args = container["args"]
    assert args[args.index("--builtin-dataplane") + 1] == demo.AGENTS_NAMESPACE
    env = env_of(container)
    assert env["DEPLOYPLANE_POSTGRES_IMAGE"] == realnode.POSTGRES_IMAGE
    assert env["DEPLOYPLANE_REDIS_IMAGE"] == realnode.REDIS_IMAGE
    # The in-cluster credentials of its own ServiceAccount, a Role in `agents` only.
    assert pod["serviceAccountName"] == f"{demo_realnode.RELEASE}-emulator"
    assert pod["automountServiceAccountToken"] is True
    binding = find(docs, "RoleBinding", f"{demo_realnode.RELEASE}-emulator")
    assert binding["metadata"]["namespace"] == demo.AGENTS_NAMESPACE
    assert binding["subjects"][0]["name"] == pod["serviceAccountName"]
