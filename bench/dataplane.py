"""The data plane at scale: N deployments through one listener agent on the dev cluster.

    DEPLOYPLANE_TOOLS_BIN=$(bash tools/k8s/build.sh path) .venv/bin/python -m bench.dataplane

What runs: a fresh dev cluster with kwok nodes (workloads on, audit log on), the
emulator as a process (normal mode: the data-plane extension is on), and the agent as a
`deployplane listener run` subprocess with exactly the chart's RBAC (its own
ServiceAccount, so the audit log tells its requests apart). Then:

1. deploy: N external_docker deployments on the listener are created through the API at
   once; `dataplane_deployed_100_s` is the time from the first create until every
   latest revision is DEPLOYED (the agent applied it and saw the rollout finish on
   kwok nodes). `agent_rss_mb` is the agent's peak VmRSS, sampled through the run.
2. steady: with everything DEPLOYED and READY, the audit log's writes by the agent's
   ServiceAccount are counted over `--steady-window` seconds (which includes at least
   one full round, `--resync`): `agent_steady_k8s_writes_per_min`, target 0.

The agent runs as the vendor's data plane does (`--routing gateway --autoscaler keda`
by default; `--routing none --autoscaler hpa` for the plain one): every deployment
also gets a KEDA ScaledObject and TriggerAuthentication, an HTTPRoute and a
NetworkPolicy, validated by the apiserver against the Gateway API and KEDA CRDs that
`make tools` generates; DEPLOYED waits for each HTTPRoute to be admitted, which
`RouteAdmitter` (tests/support/routecontroller.py, a fake Gateway controller: kwok runs
none) does as one would.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import yaml
from kubernetes import client
from tests.support import chart
from tests.support.operator_harness import API_KEY, WORKSPACE, Emulator
from tests.support.routecontroller import RouteAdmitter

from bench.report import Figure
from deployplane.devcluster import DevCluster, find_tools
from deployplane.devcluster.manifests import Applier

AGENTS_NAMESPACE = "bench-agents"
AGENT_NAMESPACE = "bench-system"
AGENT_SA = f"{chart.RELEASE}-listener-agent"


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)


def rss_mb(pid: int) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


class PeakRss:
    """Samples a process's VmRSS in a thread until stopped; keeps the peak."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.peak = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()

    def _sample(self) -> None:
        while not self._stop.wait(0.2):
            self.peak = max(self.peak, rss_mb(self.pid))

    def stop(self) -> float:
        self._stop.set()
        self._thread.join()
        return max(self.peak, rss_mb(self.pid))


def agent_values(args: argparse.Namespace) -> dict[str, Any]:
    settings: dict[str, Any] = {"autoscaler": args.autoscaler, "routing": args.routing}
    if args.routing != "none":
        settings["route"] = {
            "host": "agents.bench.test",
            "basePath": "/agents",
            "gateway": {"name": "bench", "namespace": AGENT_NAMESPACE},
        }
    return {
        "listenerAgent": {
            "enabled": True,
            "listenerId": "00000000-0000-4000-8000-000000000000",  # RBAC does not use it
            "namespaces": [AGENTS_NAMESPACE],
            **settings,
        }
    }


def agent_settings_env(values: dict[str, Any]) -> dict[str, str]:
    """The DEPLOYPLANE_* settings the chart gives the agent (routing, autoscaler...)."""
    for doc in chart.render(values, namespace=AGENT_NAMESPACE):
        if doc["kind"] == "Deployment" and doc["metadata"]["name"] == AGENT_SA:
            env = doc["spec"]["template"]["spec"]["containers"][0]["env"]
            prefixes = ("DEPLOYPLANE_ROUT", "DEPLOYPLANE_GATEWAY", "DEPLOYPLANE_KEDA")
            names = ("DEPLOYPLANE_AUTOSCALER", "DEPLOYPLANE_NETWORK_POLICY")
            return {
                e["name"]: e["value"]
                for e in env
                if "value" in e and (e["name"].startswith(prefixes) or e["name"] in names)
            }
    raise SystemExit("the chart rendered no listener agent")


def install_vendor_crds(cluster: DevCluster, tools_bin: Path) -> None:
    """The Gateway API and KEDA CRDs `make tools` generated (tools/k8s/build.sh crds)."""
    files = sorted((tools_bin / "crds").glob("*.yaml"))
    if not files:
        raise SystemExit(f"no CRDs in {tools_bin / 'crds'}: run `make tools`")
    with cluster.admin() as api:
        Applier(api).apply([yaml.safe_load(f.read_text()) for f in files])


def agent_identity(cluster: DevCluster, workdir: Path, values: dict[str, Any]) -> Path:
    """The chart's RBAC for the agent, applied; a kubeconfig of its ServiceAccount."""
    docs = [
        d
        for d in chart.render(values, namespace=AGENT_NAMESPACE)
        if d["kind"] in chart.RBAC_KINDS and d["metadata"]["name"].startswith(AGENT_SA)
    ]
    with cluster.admin() as api:
        applier = Applier(api)
        for namespace in (AGENTS_NAMESPACE, AGENT_NAMESPACE):
            applier.apply(
                {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}
            )
        applier.apply(docs)
    return cluster.service_account_kubeconfig(
        AGENT_NAMESPACE, AGENT_SA, workdir / "agent.kubeconfig"
    )


def start_agent(
    args: argparse.Namespace, emulator: Emulator, listener_id: str, kubeconfig: Path, workdir: Path
) -> subprocess.Popen[bytes]:
    env = {
        **os.environ,
        **agent_settings_env(agent_values(args)),
        "KUBECONFIG": str(kubeconfig),
        "DEPLOYPLANE_CONTROL_PLANE_URL": emulator.url,
        "DEPLOYPLANE_API_KEY": API_KEY,
        "DEPLOYPLANE_TENANT_ID": WORKSPACE,
        "DEPLOYPLANE_POLL_INTERVAL": "2",
        "DEPLOYPLANE_RESYNC_INTERVAL": str(args.resync),
    }
    return subprocess.Popen(
        [sys.executable, "-m", "deployplane.cli", "listener", "run", "--listener-id", listener_id],
        env=env,
        stdout=(workdir / "agent.log").open("ab"),
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


async def create_deployments(
    http: httpx.AsyncClient, listener_id: str, n: int, resource_spec: dict[str, Any]
) -> list[str]:
    async def one(i: int) -> str:
        body = {
            "name": f"bench-{i:04d}",
            "source": "external_docker",
            "source_config": {
                "listener_id": listener_id,
                "listener_config": {"k8s_namespace": AGENTS_NAMESPACE},
                "resource_spec": resource_spec,
            },
            "source_revision_config": {"image_uri": f"registry.example.com/bench/agent:{i}"},
        }
        response = await http.post("/v2/deployments", json=body)
        response.raise_for_status()
        return str(response.json()["id"])

    return list(await asyncio.gather(*(one(i) for i in range(n))))


async def revision_counts(http: httpx.AsyncClient, ids: set[str]) -> dict[str, int]:
    """Latest revisions by status (progress output: where the time goes)."""
    counts: dict[str, int] = {}
    for deployment_id in sorted(ids):
        page = await http.get(f"/v2/deployments/{deployment_id}/revisions", params={"limit": 1})
        status = page.json()["resources"][0]["status"]
        counts[status] = counts.get(status, 0) + 1
    return counts


async def all_deployed(http: httpx.AsyncClient, ids: set[str]) -> bool:
    done = 0
    offset = 0
    while True:
        page = (await http.get("/v2/deployments", params={"limit": 100, "offset": offset})).json()
        for d in page["resources"]:
            if d["id"] in ids and d["status"] == "READY":
                done += d["active_revision_id"] == d["latest_revision_id"]
        if len(page["resources"]) < 100:
            return done == len(ids)
        offset = page["offset"]


async def deploy_phase(args: argparse.Namespace, emulator: Emulator, listener_id: str) -> float:
    headers = {"X-Api-Key": API_KEY, "X-Tenant-Id": WORKSPACE}
    async with httpx.AsyncClient(base_url=emulator.url, headers=headers, timeout=30) as http:
        started = time.monotonic()
        # A queue maximum: with KEDA, each deployment gets its ScaledObject.
        spec = {"min_scale": 1, "queue_min_scale": 1, "queue_max_scale": 3}
        ids = set(await create_deployments(http, listener_id, args.n, spec))
        log(f"created {len(ids)} deployments")
        deadline = started + args.timeout
        shown = started
        while not await all_deployed(http, ids):
            if time.monotonic() > deadline:
                raise SystemExit(f"not every deployment DEPLOYED within {args.timeout} s")
            if time.monotonic() - shown > 5:
                shown = time.monotonic()
                log(f"{time.monotonic() - started:.0f} s: {await revision_counts(http, ids)}")
            await asyncio.sleep(0.25)
        return time.monotonic() - started


def make_listener(emulator: Emulator) -> str:
    headers = {"X-Api-Key": API_KEY, "X-Tenant-Id": WORKSPACE}
    body = {
        "compute_type": "k8s",
        "compute_id": "bench-cluster",
        "compute_config": {"k8s_namespaces": [AGENTS_NAMESPACE]},
    }
    response = httpx.post(f"{emulator.url}/v2/listeners", json=body, headers=headers)
    response.raise_for_status()
    return str(response.json()["id"])


def main() -> int:
    args = parse_args()
    tools = find_tools()
    figures: list[Figure] = []
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        nodes = max(3, (args.n * 4) // 100 + 1)  # 4 pods per deployment, 110 per node
        with DevCluster(audit_log=True, tools=tools, workloads=True, nodes=nodes) as cluster:
            emulator = Emulator(
                workdir / "emulator", step_seconds=0.05, strict=False, proxied=False
            ).start()
            admitter: RouteAdmitter | None = None
            try:
                listener_id = make_listener(emulator)
                if args.routing == "gateway" or args.autoscaler == "keda":
                    install_vendor_crds(cluster, tools.bin_dir)
                kubeconfig = agent_identity(cluster, workdir, agent_values(args))
                if args.routing != "none":
                    admin = cluster.api_client()
                    admitter = RouteAdmitter(admin, AGENTS_NAMESPACE, every=1.0).__enter__()
                agent = start_agent(args, emulator, listener_id, kubeconfig, workdir)
                rss = PeakRss(agent.pid)
                try:
                    wait_running(workdir / "agent.log")
                    elapsed = asyncio.run(deploy_phase(args, emulator, listener_id))
                    log(f"all {args.n} DEPLOYED in {elapsed:.1f} s")
                    check_rolled_out(cluster, args.n)
                    check_vendor_objects(cluster, args)
                    figures.append(Figure(f"dataplane_deployed_{args.n}_s", elapsed, "s", "<=", 60))
                    writes = steady_writes(args, cluster)
                    figures.append(Figure("agent_rss_mb", rss.stop(), "MB", "<=", 150))
                    figures.append(
                        Figure("agent_steady_k8s_writes_per_min", writes, "writes/min", "<=", 0)
                    )
                finally:
                    agent.terminate()
                    agent.wait(15)
            finally:
                if admitter is not None:
                    admitter.stop()
                emulator.stop()
    for figure in figures:
        print(figure.line(), flush=True)
    return 0


def wait_running(agent_log: Path) -> None:
    """Deployments are created once the agent runs: before its first heartbeat the
    emulator would deploy them on its timers, as for a listener without an agent."""
    deadline = time.monotonic() + 120
    while "listener agent running" not in agent_log.read_text(errors="replace"):
        if time.monotonic() > deadline:
            raise SystemExit(f"the agent did not start: {agent_log.read_text()[-2000:]}")
        time.sleep(0.2)


def check_rolled_out(cluster: DevCluster, n: int) -> None:
    """DEPLOYED must mean rolled out: every agent server is there, fully available."""
    with cluster.admin() as api:
        servers = (
            client.AppsV1Api(api)
            .list_namespaced_deployment(
                AGENTS_NAMESPACE, label_selector="app.kubernetes.io/component=agent-server"
            )
            .items
        )
    available = [d for d in servers if (d.status.available_replicas or 0) >= d.spec.replicas]
    if len(available) != n:
        raise SystemExit(f"DEPLOYED but only {len(available)} of {n} servers available")
    log(f"{n} agent servers rolled out on kwok nodes")


def check_vendor_objects(cluster: DevCluster, args: argparse.Namespace) -> None:
    """With routing and KEDA on, every deployment has its HTTPRoute and ScaledObject."""
    with cluster.admin() as api:
        custom = client.CustomObjectsApi(api)
        for wanted, (group, version, plural) in (
            (args.routing == "gateway", ("gateway.networking.k8s.io", "v1", "httproutes")),
            (args.autoscaler == "keda", ("keda.sh", "v1alpha1", "scaledobjects")),
        ):
            if wanted:
                items = custom.list_namespaced_custom_object(
                    group, version, AGENTS_NAMESPACE, plural
                )["items"]
                if len(items) != args.n:
                    raise SystemExit(f"{len(items)} {plural} for {args.n} deployments")
                log(f"{len(items)} {plural}")


def steady_writes(args: argparse.Namespace, cluster: DevCluster) -> float:
    """The agent's Kubernetes writes per minute once everything is DEPLOYED."""
    user = f"system:serviceaccount:{AGENT_NAMESPACE}:{AGENT_SA}"
    # The filter must match the agent's requests, or zero would prove nothing.
    applied = sum(cluster.count_writes(user=user).values())
    if applied == 0:
        raise SystemExit(f"the audit log has no write by {user}: wrong identity filter")
    log(f"the agent's writes while deploying: {applied}")
    # Let the last reports' rounds finish, then count over a window with full rounds.
    time.sleep(3)
    since = dt.datetime.now(dt.UTC)
    log(f"steady: counting the agent's writes for {args.steady_window:.0f} s")
    time.sleep(args.steady_window)
    writes = cluster.count_writes(since, user=user)
    log(f"steady writes: {writes or 'none'}")
    return float(sum(writes.values()) * 60 / args.steady_window)


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100, help="deployments")
    parser.add_argument("--timeout", type=float, default=600.0, help="bound of the deploy phase")
    parser.add_argument("--steady-window", type=float, default=30.0, help="seconds counted")
    parser.add_argument("--resync", type=float, default=10.0, help="agent full-round period")
    parser.add_argument("--routing", choices=("none", "ingress", "gateway"), default="gateway")
    parser.add_argument("--autoscaler", choices=("hpa", "keda"), default="keda")
    return parser.parse_args()


if __name__ == "__main__":
    sys.exit(main())
