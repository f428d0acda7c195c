"""`deployplane demo up --real-node` (`make demo REAL_NODE=1`): the demo on a real node.

The same demo as `demo up`, on the dev cluster's real node (realnode/, root) instead of
kwok's: `helm install` of charts/deployplane with examples/helm/real-node-values.yaml
runs the operator (two replicas, Kopf peering), the control-plane emulator (with
examples/controlplane.yaml) and the listener agent of the example Listener as pods of
the image `make images` built, and the agent rolls the Listener's example deployment out
as real containers in namespace `agents`; the emulator's built-in data plane
(`emulator.builtinDataplane`) rolls out the one with no listener (the git example) there
too. No registry is reachable from the node: the images are the archives `make images`
left in the image cache, imported at `up`, and the examples' images (`registry.example.com/...`,
and the git example's simulated build, `registry.deployplane.local/<name>:<commit>`,
served by no registry here) are the tier's agent-server stand-in, tagged with their names.

The emulator is reached from the host through a `kubectl port-forward` on 127.0.0.1
(its pid in the demo's state, stopped by `demo down` with the rest); the cluster's stop
removes every container, process, namespace, veth and mount of the node.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml
from kubernetes import client
from kubernetes.client.exceptions import ApiException
from rich.console import Console

from deployplane.api.connection import ConnectionSettings
from deployplane.api.models import Source
from deployplane.devcluster.cluster import DevCluster
from deployplane.devcluster.errors import DevClusterError
from deployplane.devcluster.realnode import images

RELEASE = "deployplane"
RELEASE_NAMESPACE = "deployplane-system"
EMULATOR_PORT = 8124
VALUES = "examples/helm/real-node-values.yaml"
EMULATOR_CONFIG = "examples/controlplane.yaml"
# The example's image -> the image of `make images` that stands in for it on the node
# (answers GET /ok on port 8000, as the rendered probes ask).
STAND_INS = {
    "registry.example.com/acme/support-bot:1.0.0": "docker.io/library/deployplane-e2e-agent:1",
}
# ... and for the image of the git example's simulated build, known once its revision is.
BUILT_STAND_IN = "docker.io/library/deployplane-e2e-agent:1"
DEMO_API_KEY = "demo-key-not-secret"  # examples/controlplane.yaml's; local only
AGENT_SELECTOR = "app.kubernetes.io/component=listener-agent"
HELP = (
    "On a real node (root; `make images` first): the operator, emulator and listener "
    "agent as pods of the built image, the workloads as real containers."
)
ApplyExamples = Callable[..., None]  # demo._apply_examples(api, kinds, url="")


def start(
    state: Path, console: Console, apply_examples: ApplyExamples, namespace: str
) -> DevCluster:
    """demo.up's steps, the servers as pods on a real node; the examples applied in
    `namespace` (the AgentDeployments once the agent runs)."""
    with console.status("starting the dev cluster with a real node..."):
        cluster = start_cluster(state)
    console.print(f"[green]✓[/green] Kubernetes API at {cluster.server}, real node Ready")
    with console.status("helm install: operator, emulator, listener agent (pods)..."):
        install(cluster, state, namespace)
    url = forward_emulator(cluster, state)
    console.print(f"[green]✓[/green] chart installed; emulator forwarded to {url}")
    with console.status("applying CRDs and examples/..."), cluster.admin() as api:
        kinds = frozenset({"Secret", "ControlPlaneConnection", "Listener"})
        apply_examples(api, kinds, in_cluster_url())
    with console.status("waiting for the listener agent's pod..."):
        wait_agent_running(cluster)
    with cluster.admin() as api:
        apply_examples(api, frozenset({"AgentDeployment"}))
    with console.status("tagging the git example's built image..."):
        tag_built_images(cluster, url)
    console.print(f"[green]✓[/green] examples applied in {namespace}; listener agent running")
    return cluster


def in_cluster_url() -> str:
    """The emulator's Service, as the operator's pods reach it."""
    return f"http://{RELEASE}-emulator.{RELEASE_NAMESPACE}.svc:{EMULATOR_PORT}"


def start_cluster(state: Path) -> DevCluster:
    cluster = DevCluster(
        state / "cluster", detached=True, real_node=True, nodes=0, ready_timeout=120
    )
    return cluster.start()


def _holder(cluster: DevCluster) -> int:
    return next(p.pid for p in cluster.server_processes if p.name == images.HOLDER)


def install(cluster: DevCluster, state: Path, watch: str) -> None:
    """The stand-ins tagged, the agent's namespaces made, and the chart installed,
    watching `watch` (helm waits for every Deployment of the release to be Available)."""
    ctr = cluster.tools.bin_dir / "ctr"
    loaded = images.list_images(_holder(cluster), ctr)
    for example, stand_in in STAND_INS.items():
        if stand_in not in loaded:
            raise DevClusterError(f"{stand_in} is not on the node: run `make images` first")
        images.tag(_holder(cluster), ctr, stand_in, example)
    values = yaml.safe_load(Path(VALUES).read_text())
    agents = values["listenerAgent"]["namespaces"]
    builtin = values["emulator"]["builtinDataplane"]["namespace"]
    with cluster.admin() as api:  # the chart's Roles live in them
        for name in dict.fromkeys((watch, *agents, builtin)):
            client.CoreV1Api(api).create_namespace({"metadata": {"name": name}})
    overrides: dict[str, Any] = {
        "watchNamespaces": [watch],
        "emulator": {"config": yaml.safe_load(Path(EMULATOR_CONFIG).read_text())},
        "listenerAgent": {"listenerNamespace": watch},
    }
    overrides_file = state / "values.json"
    overrides_file.write_text(json.dumps(overrides))  # JSON is YAML
    helm = cluster.tools.helm
    if helm is None:
        raise DevClusterError("helm not found: run `make tools`")
    argv = [str(helm), "install", RELEASE, "charts/deployplane", "--namespace"]
    argv += [RELEASE_NAMESPACE, "--create-namespace", "--kubeconfig", str(cluster.kubeconfig)]
    argv += ["-f", VALUES, "-f", str(overrides_file), "--wait", "--timeout", "5m"]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=330, check=False)
    if done.returncode != 0:
        raise DevClusterError(f"helm install failed: {done.stderr.strip()[-2000:]}")


def forward_emulator(cluster: DevCluster, state: Path) -> str:
    """`kubectl port-forward` to the emulator on a free loopback port, in the background
    (pid in `port-forward.pid`); its URL, also written to `emulator.url`."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    argv = [str(cluster.tools.kubectl), f"--kubeconfig={cluster.kubeconfig}", "port-forward"]
    argv += ["-n", RELEASE_NAMESPACE, "--address", "127.0.0.1"]
    argv += [f"svc/{RELEASE}-emulator", f"{port}:{EMULATOR_PORT}"]
    with (state / "port-forward.log").open("a") as log:
        proc = subprocess.Popen(argv, stdout=log, stderr=log, start_new_session=True)
    (state / "port-forward.pid").write_text(str(proc.pid))
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while "Forwarding from" not in (state / "port-forward.log").read_text(errors="replace"):
        if proc.poll() is not None or time.monotonic() > deadline:
            raise DevClusterError(f"kubectl port-forward failed; see {state / 'port-forward.log'}")
        time.sleep(0.2)
    (state / "emulator.url").write_text(url)
    return url


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
    from deployplane.controlplane.dataplane import built_image

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
