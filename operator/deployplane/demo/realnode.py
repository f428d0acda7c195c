"""`deployplane demo up --real-node` (`make demo REAL_NODE=1`): the demo on a real node.

The same demo as `demo up`, on the dev cluster's real node (realnode/, root) instead of
kwok's. The control-plane emulator runs on the host, as in the kwok demo (same
examples/controlplane.yaml, SQLite in the demo's state), with real image builds
(`image_builds`, imported into the node: `langgraph deploy --remote` gets a runnable
agent server) and its built-in data plane in namespace `agents` of the demo's cluster;
it listens on the host's end of the node's veth (realnode layout.HOST_IP), which the
node's pods reach (the egress guard lets them) and the host's user too. `helm install`
of charts/deployplane with examples/helm/real-node-values.yaml and `chart_overrides`
(the chart's emulator off, the operator and agent pointed at the host's emulator with
the demo's key) runs the operator (two replicas, Kopf peering) and the listener agent of
the example Listener as pods of the image `make images` built; the agent rolls the
Listener's example deployment out as real containers in `agents`, and the built-in data
plane the one with no listener (the git example) there too. No registry is reachable
from the node: the images are the archives `make images` left in the image cache,
imported at `up`, and the examples' images (`registry.example.com/...`, and the git
example's simulated build, `registry.deployplane.local/<name>:<commit>`, served by no
registry here) are the tier's agent-server stand-in, tagged with their names.

`demo down` stops the emulator by its pid, then the cluster, whose stop removes every
container, process, namespace, veth and mount of the node.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import subprocess
import time
from pathlib import Path
from typing import Any

import yaml
from kubernetes import client
from kubernetes.client.exceptions import ApiException
from rich.console import Console

from deployplane.api.connection import ConnectionSettings
from deployplane.api.models import Source
from deployplane.demo.steps import DEMO_API_KEY, apply_examples, start_emulator
from deployplane.devcluster.cluster import DevCluster
from deployplane.devcluster.errors import DevClusterError
from deployplane.devcluster.realnode import images, layout

RELEASE = "deployplane"
RELEASE_NAMESPACE = "deployplane-system"
VALUES = "examples/helm/real-node-values.yaml"
EMULATOR_CONFIG = "examples/controlplane.yaml"
# The emulator's address: the host's end of the node's veth (pods reach it, the host too).
EMULATOR_HOST = layout.HOST_IP
# The Secret (in RELEASE_NAMESPACE) of the demo's key, for the operator and the agent.
KEY_SECRET = f"{RELEASE}-demo-api-key"
# The example's image -> the image of `make images` that stands in for it on the node
# (answers GET /ok on port 8000, as the rendered probes ask).
STAND_INS = {
    "registry.example.com/acme/support-bot:1.0.0": "docker.io/library/deployplane-e2e-agent:1",
}
# ... and for the image of the git example's simulated build, known once its revision is.
BUILT_STAND_IN = "docker.io/library/deployplane-e2e-agent:1"
AGENT_SELECTOR = "app.kubernetes.io/component=listener-agent"


def start(state: Path, console: Console, namespace: str) -> DevCluster:
    """`demo up`'s steps (the demo's steps module), the servers as pods on a real node,
    the emulator on the host; the examples applied in `namespace` (the AgentDeployments
    once the agent runs)."""
    with console.status("starting the dev cluster with a real node..."):
        cluster = start_cluster(state)
    console.print(f"[green]✓[/green] Kubernetes API at {cluster.server}, real node Ready")
    with console.status("starting the control-plane emulator (real image builds)..."):
        config = state / "controlplane.yaml"
        base = yaml.safe_load(Path(EMULATOR_CONFIG).read_text())
        config.write_text(json.dumps(emulator_config(base, cluster.state_dir)))  # JSON is YAML
        url = start_emulator(
            cluster, host=EMULATOR_HOST, config=config, env=emulator_env(cluster.kubeconfig)
        )
    console.print(f"[green]✓[/green] control-plane emulator at {url}")
    with console.status("helm install: operator, listener agent (pods)..."):
        install(cluster, state, namespace, url)
    console.print("[green]✓[/green] chart installed")
    with console.status("applying CRDs and examples/..."), cluster.admin() as api:
        kinds = frozenset({"Secret", "ControlPlaneConnection", "Listener"})
        apply_examples(api, kinds, url)
    with console.status("waiting for the listener agent's pod..."):
        wait_agent_running(cluster)
    with cluster.admin() as api:
        apply_examples(api, frozenset({"AgentDeployment"}))
    with console.status("tagging the git example's built image..."):
        tag_built_images(cluster, url)
    console.print(f"[green]✓[/green] examples applied in {namespace}; listener agent running")
    return cluster


def _values() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load(Path(VALUES).read_text())
    return loaded


def emulator_config(base: dict[str, Any], cluster_state: Path) -> dict[str, Any]:
    """The demo's emulator config (`base`, examples/controlplane.yaml) with real image
    builds, each imported into the real node of the cluster at `cluster_state`."""
    builds = {**base.get("image_builds", {}), "load_into_dev_cluster": str(cluster_state)}
    return {**base, "image_builds": builds}


def emulator_env(kubeconfig: Path, values: dict[str, Any] | None = None) -> dict[str, str]:
    """The emulator's environment: its built-in data plane deploys into the demo's
    cluster with the local PostgreSQL and Redis images, as the chart's agent does."""
    agent = (values or _values())["listenerAgent"]
    return {
        "KUBECONFIG": str(kubeconfig),
        "DEPLOYPLANE_POSTGRES_IMAGE": agent["postgresImage"],
        "DEPLOYPLANE_REDIS_IMAGE": agent["redisImage"],
    }


def chart_overrides(watch: str, url: str) -> dict[str, Any]:
    """The demo's values over VALUES: the chart's emulator off (it runs on the host), the
    operator and the listener agent pointed at `url` with the key in KEY_SECRET,
    watching `watch`."""
    return {
        "watchNamespaces": [watch],
        "emulator": {"enabled": False},
        "controlPlane": {"url": url, "apiKeySecret": {"name": KEY_SECRET, "key": "api-key"}},
        "listenerAgent": {"listenerNamespace": watch},
    }


def start_cluster(state: Path) -> DevCluster:
    cluster = DevCluster(
        state / "cluster", detached=True, real_node=True, nodes=0, ready_timeout=120
    )
    return cluster.start()


def _holder(cluster: DevCluster) -> int:
    return next(p.pid for p in cluster.server_processes if p.name == images.HOLDER)


def install(cluster: DevCluster, state: Path, watch: str, url: str) -> None:
    """The stand-ins tagged, the namespaces and the key's Secret made, and the chart
    installed, watching `watch`, its servers using the emulator at `url` (helm waits for
    every Deployment of the release to be Available)."""
    ctr = cluster.tools.bin_dir / "ctr"
    loaded = images.list_images(_holder(cluster), ctr)
    for example, stand_in in STAND_INS.items():
        if stand_in not in loaded:
            raise DevClusterError(f"{stand_in} is not on the node: run `make images` first")
        images.tag(_holder(cluster), ctr, stand_in, example)
    agents = _values()["listenerAgent"]["namespaces"]
    with cluster.admin() as api:  # the chart's Roles live in them
        core = client.CoreV1Api(api)
        for name in dict.fromkeys((watch, *agents, RELEASE_NAMESPACE)):
            core.create_namespace({"metadata": {"name": name}})
        secret = {"metadata": {"name": KEY_SECRET}, "stringData": {"api-key": DEMO_API_KEY}}
        core.create_namespaced_secret(RELEASE_NAMESPACE, secret)
    overrides_file = state / "values.json"
    overrides_file.write_text(json.dumps(chart_overrides(watch, url)))  # JSON is YAML
    helm = cluster.tools.helm
    if helm is None:
        raise DevClusterError("helm not found: run `make tools`")
    argv = [str(helm), "install", RELEASE, "charts/deployplane", "--namespace"]
    argv += [RELEASE_NAMESPACE, "--kubeconfig", str(cluster.kubeconfig)]
    argv += ["-f", VALUES, "-f", str(overrides_file), "--wait", "--timeout", "5m"]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=330, check=False)
    if done.returncode != 0:
        raise DevClusterError(f"helm install failed: {done.stderr.strip()[-2000:]}")


def wait_agent_running(cluster: DevCluster, timeout: float = 120) -> None:
    """Until the agent's pod logged that it runs (it has the listener's id and sent its
    first heartbeat: only then does the emulator leave the deploy stages to it)."""
    deadline = time.monotonic() + timeout
    with cluster.admin() as api:
        core = client.CoreV1Api(api)
        while time.monotonic() < deadline:
            pods = core.list_namespaced_pod(RELEASE_NAMESPACE, label_selector=AGENT_SELECTOR)
            for pod in pods.items:
                with contextlib.suppress(ApiException):  # not started yet
                    log = core.read_namespaced_pod_log(pod.metadata.name, RELEASE_NAMESPACE)
                    if "listener agent running" in str(log):
                        return
            time.sleep(0.5)
    raise DevClusterError(
        f"the listener agent did not start; see kubectl logs -n {RELEASE_NAMESPACE} "
        f"-l {AGENT_SELECTOR}"
    )


def tag_built_images(cluster: DevCluster, url: str, timeout: float = 120) -> list[str]:
    """The stand-in tagged with the image name of each git_host deployment's simulated
    build (`built_image`: the name and the revision's random commit, read from the
    emulator at `url` once the operator created the deployment); the names tagged.
    A pod made before the tag waits in the kubelet's pull back-off, then finds it."""
    names = asyncio.run(_built_images(url, time.monotonic() + timeout))
    ctr = cluster.tools.bin_dir / "ctr"
    for name in names:
        images.tag(_holder(cluster), ctr, BUILT_STAND_IN, name)
    return names


async def _built_images(url: str, deadline: float) -> list[str]:
    # Imported here: the emulator's storage (SQLAlchemy) is slow to import, and only
    # this step of `demo up --real-node` needs the build's naming.
    from deployplane.emulator.store.dataplane import built_image

    async with ConnectionSettings(url=url, api_key=DEMO_API_KEY).client() as api:
        while time.monotonic() < deadline:
            names = []
            async for d in api.iter_deployments():
                if d.source == Source.GIT_HOST and d.latest_revision_id is not None:
                    revision = await api.get_revision(d.id, d.latest_revision_id)
                    commit = revision.source_revision_config.repo_commit_sha
                    names.append(built_image(d.name, commit))
            if names:
                return names
            await asyncio.sleep(0.5)
    raise DevClusterError("the git example's deployment did not reach the emulator")
