"""The operator at scale: 1,000 AgentDeployments on the dev cluster against the emulator.

Run from the repository root (as a module: a script named `operator.py` would shadow
the standard library's `operator` module):

    DEPLOYPLANE_TOOLS_BIN=$(bash tools/k8s/build.sh path) .venv/bin/python -m bench.operator

What runs: a fresh dev cluster (etcd + kube-apiserver, audit log on, no
controller-manager), the emulator as a process (`step_seconds: 0`), and the operator as
a `deployplane operator run` subprocess (so its memory is its own, read from /proc),
authenticated as a ServiceAccount with the RBAC of `manifests/rbac.yaml`, so that the
audit log tells its requests from the bench's own (admin certificate).
Phases, each bounded by `--timeout`:

1. converge: N custom resources are created at once (`--apply-concurrency` client
   threads); time from the first create request until every one is Ready for its
   generation. Emulator calls in that span / N = `api_calls_per_cr`; the operator's
   writes to the resources and their status in that span / N = `k8s_writes_per_cr`
   (audit log, by the operator's user). The apply-to-POST
   latency is the deployment's `created_at` (emulator clock, set when it handles the
   POST) minus the moment this script sent that resource's create request (same
   machine, same wall clock). `operator_rss_mb_1000` is the operator's VmRSS then.
   Then the run waits until the operator's event recorder has posted the 2N Events of
   the burst (`Created`, `Deployed`; they go out at DEPLOYPLANE_EVENT_QPS behind the
   writes): `events_posted_1000_s`, from the first create.
2. latency: single applies, one at a time, into the operator holding the N Ready.
3. resume: the operator is stopped (SIGTERM) and started again (default resync);
   `resume_1000_s` is the time from its spawn until the emulator has answered N
   `GET /v2/deployments/{id}`: each daemon's first pass after a start is a full
   observation costing exactly one such GET (and compares, writing nothing), so the
   N-th GET marks the last daemon's first pass. The run then checks that nothing was
   created on the control plane and nothing written to Kubernetes.
4. steady: the operator is started once more with a resync of `--resync` seconds; after
   its first passes, the audit log's writes in the namespace and the emulator's calls
   are counted over `--steady-window` seconds (a multiple of the resync, so every
   resource resyncs window/resync times in it).

`BENCH_PROFILE=dir` records profiles of the operator while it converges
(`bench/profiling.py`).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime as dt
import json
import os
import signal
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import yaml
from kubernetes import client, watch
from kubernetes.client.exceptions import ApiException
from tests.support.operator_harness import (
    ADMIN_KEY,
    API_KEY,
    GROUP,
    REPO,
    VERSION,
    WORKSPACE,
    Emulator,
    OperatorProcess,
    operator_env,
    ready_for_generation,
)

from bench.audit_counts import requests_by_verb, writes_by_resource, writes_per_cr
from bench.profiling import Profiles
from bench.report import Figure
from deployplane.api.client import ControlPlaneClient
from deployplane.devcluster import DevCluster, find_tools
from deployplane.devcluster.manifests import Applier
from deployplane.devcluster.serviceaccounts import service_account_username

PLURAL = "agentdeployments"
SERVICE_ACCOUNT = "deployplane"


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)


def vm_rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmRSS for pid {pid}")


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def audit_events(path: Path) -> list[dict[str, Any]]:
    lines = path.read_text().split("\n")[:-1]  # the last one may be half written
    return [json.loads(line) for line in lines if line]


def trace(path: Path, namespace: str, name: str, sent: float) -> None:
    """Print one resource's Kubernetes requests, in ms after its create was sent."""
    for event in audit_events(path):
        ref = event.get("objectRef") or {}
        if ref.get("namespace") != namespace or ref.get("name") != name:
            continue
        at = dt.datetime.fromisoformat(event["requestReceivedTimestamp"]).timestamp()
        sub = f"/{ref['subresource']}" if ref.get("subresource") else ""
        log(
            f"  +{(at - sent) * 1000:7.1f} ms {event['verb']} {ref.get('resource')}{sub}"
            f" -> {(event.get('responseStatus') or {}).get('code')}"
        )


def agent_deployment(name: str) -> dict[str, Any]:
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "AgentDeployment",
        "metadata": {"name": name},
        "spec": {
            "source": "external_docker",
            "sourceConfig": {"resourceSpec": {"minScale": 1}},
            "sourceRevisionConfig": {"imageUri": "registry.example.com/agent:1"},
        },
    }


def percentile(values: list[float], q: int) -> float:
    if len(values) == 1:
        return values[0]
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1]


class ReadyWatch:
    """Watches the namespace and notes when the N-th resource is Ready for its generation.

    A watch, not repeated lists: listing 1,000 resources every half second cost the
    apiserver, the busiest process of the run, more CPU than the operator's own writes."""

    def __init__(self, custom: client.CustomObjectsApi, namespace: str, n: int) -> None:
        self.custom = custom
        self.namespace = namespace
        self.n = n
        self.ready: set[str] = set()
        self.done = threading.Event()
        self.at: float | None = None
        self.at_wall: dt.datetime | None = None

    def start(self) -> None:
        threading.Thread(target=self._run, daemon=True).start()

    def _see(self, obj: dict[str, Any]) -> None:
        name = obj["metadata"]["name"]
        if ready_for_generation(obj):
            self.ready.add(name)
        else:
            self.ready.discard(name)
        if len(self.ready) >= self.n and not self.done.is_set():
            self.at = time.monotonic()
            self.at_wall = dt.datetime.now(dt.UTC)
            self.done.set()

    def _run(self) -> None:
        args = (GROUP, VERSION, self.namespace, PLURAL)
        version = None
        while not self.done.is_set():
            if version is None:
                listing = self.custom.list_namespaced_custom_object(*args)
                for obj in listing["items"]:
                    self._see(obj)
                version = listing["metadata"]["resourceVersion"]
            try:
                for event in watch.Watch().stream(
                    self.custom.list_namespaced_custom_object,
                    *args,
                    resource_version=version,
                    timeout_seconds=60,
                ):
                    obj = event["object"]
                    version = obj["metadata"]["resourceVersion"]
                    if event["type"] in ("ADDED", "MODIFIED"):
                        self._see(obj)
                    if self.done.is_set():
                        return
            except ApiException as exc:
                if exc.status != 410:
                    raise
                version = None  # expired: list again


class Emu:
    """The emulator's stats endpoints."""

    def __init__(self, emulator: Emulator) -> None:
        self.http = httpx.Client(
            base_url=emulator.url, headers={"X-Admin-Key": ADMIN_KEY}, timeout=30
        )

    def reset(self) -> None:
        self.http.delete("/_emulator/stats").raise_for_status()

    def stats(self) -> dict[str, Any]:
        stats: dict[str, Any] = self.http.get("/_emulator/stats").json()
        return stats

    def count(self, route: str) -> int:
        return sum(self.stats()["requests"].get(route, {}).values())


def wait_until(
    predicate: Callable[[], bool], *, within: float, what: str, every: float = 0.25
) -> None:
    deadline = time.monotonic() + within
    while not predicate():
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what}: not within {within:g} s")
        time.sleep(every)


class Bench:
    workloads = False
    """Whether the dev cluster runs its controller-manager and kwok nodes (bench/scale.py)."""

    def __init__(self, args: argparse.Namespace, workdir: Path) -> None:
        self.args = args
        self.n: int = args.n
        self.total: int = args.n  # resources in the namespace (the latency phase adds some)
        self.workdir = workdir
        self.figures: list[Figure] = []
        self.stack = contextlib.ExitStack()
        self.profiles = Profiles.from_environment()
        self.apply_began = 0.0
        """When the converge's first create was sent (monotonic)."""
        self.controller_cpu_s = 0.0
        """The controller process's CPU seconds over the last `timed_apply`."""

    def figure(self, *args: Any, **kwargs: Any) -> None:
        fig = Figure(*args, **kwargs)
        self.figures.append(fig)
        log(fig.line())

    # ------------------------------------------------------------------ setup
    def start(self) -> None:
        log("starting the dev cluster (audit log on)")
        self.profiles.enable_apiserver_profiling()
        self.cluster = self.stack.enter_context(
            DevCluster(
                self.workdir / "cluster",
                audit_log=True,
                controller_manager=self.workloads,
                workloads=self.workloads,
                tools=find_tools(),
            )
        )
        self.api = self.stack.enter_context(self.cluster.admin())
        self.api.configuration.connection_pool_maxsize = self.args.apply_concurrency
        crds = [
            yaml.safe_load(p.read_text())
            for p in sorted((REPO / "crds").glob("*.deployplane.io.yaml"))
        ]
        Applier(self.api).apply(crds)
        self.custom = client.CustomObjectsApi(self.api)
        self.namespace = "bench"
        client.CoreV1Api(self.api).create_namespace(
            client.V1Namespace(metadata=client.V1ObjectMeta(name=self.namespace))
        )
        self.kubeconfig = self.controller_identity()
        log("starting the emulator (step_seconds 0)")
        # Plain (no proxy hop): the benchmark reads the emulator's own stats extension.
        self.emulator = Emulator(
            self.workdir / "emulator", step_seconds=0, strict=False, proxied=False
        ).start()
        self.stack.callback(self.emulator.stop)
        self.emu = Emu(self.emulator)
        self.stack.callback(self.emu.http.close)

    def controller_identity(self) -> Path:
        """The operator's ServiceAccount and RBAC (`manifests/rbac.yaml`, bound in the
        bench namespace, plus the namespaces list/watch Kopf needs when it watches one
        namespace, as the chart's namespaced mode grants); a kubeconfig with a token for
        it. The controller is then the only client writing as `self.user`."""
        docs = [d for d in yaml.safe_load_all((REPO / "manifests" / "rbac.yaml").read_text()) if d]
        for doc in docs:
            if doc["kind"] == "ClusterRole":
                namespaces = {"apiGroups": [""], "resources": ["namespaces"]}
                doc["rules"].append({**namespaces, "verbs": ["list", "watch"]})
            if doc["kind"] == "ServiceAccount":
                doc["metadata"]["namespace"] = self.namespace
            for subject in doc.get("subjects", []):
                subject["namespace"] = self.namespace
            doc["metadata"]["name"] = f"{doc['metadata']['name']}-bench"
        for doc in docs:  # the binding refers to the ClusterRole by name
            if "roleRef" in doc:
                doc["roleRef"]["name"] = f"{doc['roleRef']['name']}-bench"
            for subject in doc.get("subjects", []):
                subject["name"] = f"{subject['name']}-bench"
        Applier(self.api).apply(docs)
        account = f"{SERVICE_ACCOUNT}-bench"
        self.user = service_account_username(self.namespace, account)
        return self.cluster.service_account_kubeconfig(
            self.namespace, account, self.workdir / "controller.kubeconfig"
        )

    def cpu_by_process(self, controller: str = "operator") -> dict[str, float]:
        """CPU seconds so far of each process taking part (where the time goes);
        `controller` names the one at `self.pid`."""
        assert self.emulator.process is not None
        pids = {controller: self.pid, "emulator": self.emulator.process.pid, "bench": os.getpid()}
        pids.update({server.name: server.pid for server in self.cluster.server_processes})
        return {name: cpu_seconds(pid) for name, pid in pids.items()}

    def operator(self, resync: float, tag: str, *args: str, **extra: str) -> OperatorProcess:
        """`deployplane operator run` (not started) with the bench's environment, its
        command-line `args` and `extra` environment on top."""
        env = operator_env(
            self.emulator,
            self.kubeconfig,
            **self.profiles.env(f"operator-{tag}"),
            DEPLOYPLANE_POLL_INTERVAL=str(self.args.poll_interval),
            DEPLOYPLANE_POLL_MAX_INTERVAL=str(self.args.poll_max),
            DEPLOYPLANE_RESYNC_INTERVAL=str(resync),
            **extra,
        )
        log_path = self.workdir / f"operator-{tag}.log"
        proc = OperatorProcess(self.namespace, env, log_path, extra_args=args)
        self.stack.callback(proc.stop)
        return proc

    def wait_operator_listening(self, since: dt.datetime) -> None:
        """Kopf lists before it watches; once it has listed, nothing created later is
        missed, so its first list request marks the operator as ready."""

        def listed() -> bool:
            return any(
                event.get("verb") == "list"
                and (event.get("responseStatus") or {}).get("code") == 200
                and event.get("objectRef", {}).get("resource") == PLURAL
                and event.get("objectRef", {}).get("namespace") == self.namespace
                and dt.datetime.fromisoformat(event["requestReceivedTimestamp"]) >= since
                for event in audit_events(self.cluster.audit_log)
            )

        wait_until(listed, within=self.args.timeout, what="operator list request")

    def resource(self, name: str) -> dict[str, Any]:
        """The AgentDeployment the bench creates under `name`."""
        return agent_deployment(name)

    # ------------------------------------------------------------------ phases
    def apply_all(self) -> dict[str, float]:
        """Create every resource at once; return each one's send time (epoch seconds)."""
        sent: dict[str, float] = {}
        lock = threading.Lock()

        def create(name: str) -> None:
            with lock:
                sent[name] = time.time()
            self.custom.create_namespaced_custom_object(
                GROUP, VERSION, self.namespace, PLURAL, self.resource(name)
            )

        names = [f"agent-{i:05d}" for i in range(self.n)]
        with ThreadPoolExecutor(self.args.apply_concurrency) as pool:
            list(pool.map(create, names))
        return sent

    def timed_apply(
        self, phase: str, controller: str
    ) -> tuple[float, dict[str, float], dict[str, Any], dict[str, int]]:
        """Apply N resources at once, with the emulator's counters reset: seconds from the
        first create until all are Ready, each one's send time, the emulator's stats, and
        the controller's Kubernetes writes meanwhile by resource (audit log).
        Logs the CPU seconds each process spent meanwhile."""
        self.emu.reset()
        self.profiles.converge_starts(self.pid)
        cpu0 = self.cpu_by_process(controller)
        ready = ReadyWatch(self.custom, self.namespace, self.n)
        ready.start()
        log(f"{phase}: applying {self.n} AgentDeployments")
        since = dt.datetime.now(dt.UTC)
        began = self.apply_began = time.monotonic()
        with self.profiles.cpu(self.pid, controller), self.profiles.apiserver(self.api):
            sent = self.apply_all()
            log(f"{phase}: applied in {time.monotonic() - began:.1f} s")
            if not ready.done.wait(self.args.timeout):
                raise TimeoutError(f"{phase}: only {len(ready.ready)}/{self.n} Ready")
        assert ready.at is not None
        assert ready.at_wall is not None
        converge_s = ready.at - began
        stats = self.emu.stats()
        cpu1 = self.cpu_by_process(controller)
        spent = ", ".join(f"{name} {cpu1[name] - cpu0[name]:.1f} s" for name in cpu0)
        events = audit_events(self.cluster.audit_log)
        window = {"user": self.user, "namespace": self.namespace, "since": since}
        writes = writes_by_resource(events, **window, until=ready.at_wall)
        failed = writes_by_resource(events, **window, until=ready.at_wall, failed_only=True)
        self.controller_cpu_s = cpu1[controller] - cpu0[controller]
        log(f"{phase}: {converge_s:.1f} s; CPU: {spent}; emulator: {stats}")
        log(f"{phase}: {controller} writes until all Ready: {dict(writes)}; failed {dict(failed)}")
        every = requests_by_verb(events, user=self.user, since=since, until=ready.at_wall)
        log(f"{phase}: {controller} requests until all Ready: {dict(sorted(every.items()))}")
        return converge_s, sent, stats, dict(writes)

    def converge(self) -> None:
        proc = self.operator(600.0, "converge")
        self.emu.reset()
        since = dt.datetime.now(dt.UTC)
        proc.start()
        assert proc.process is not None
        self.pid = proc.process.pid
        self.wait_operator_listening(since)
        time.sleep(1.0)  # let its start-up work finish before the clock starts
        converge_s, sent, stats, writes = self.timed_apply("converge", "operator")
        self.figure("converge_1000_s", converge_s, "s", "<=", 60)
        # Not a target of its own: `make bench` divides it by the floor's (operator_cpu_ratio).
        print(f"CPU operator_cpu_s_1000 {self.controller_cpu_s:.2f} s", flush=True)
        self.figure("api_calls_per_cr", stats["total"] / self.n, "calls", "<=", 4, digits=2)
        per_cr = writes_per_cr(writes, PLURAL, self.n)
        # The floor's three: the create marker rides in the finalizer's patch and stays
        # (as Crossplane's external-name; a recorded id supersedes it).
        self.figure("k8s_writes_per_cr", per_cr, "writes", "<=", 3, digits=2)
        latencies = self.apply_to_post(sent)
        median = sorted(zip(latencies, sent, strict=True))[len(latencies) // 2][1]
        log(f"converge: Kubernetes requests on {median} (the median apply-to-POST)")
        trace(self.cluster.audit_log, self.namespace, median, sent[median])
        # Within a burst of N this is queueing behind the burst (converge_1000_s is the
        # figure for that); informational. The latency target is measured by latency().
        log(
            f"converge: apply-to-POST within the burst: p50 {percentile(latencies, 50):.0f} ms, "
            f"p99 {percentile(latencies, 99):.0f} ms"
        )
        self.figure("operator_rss_mb_1000", vm_rss_mb(self.pid), "MB", "<=", 150)
        # After the RSS figure: the memory report itself costs memory.
        self.profiles.memory(self.pid, "operator-converge")
        self.converge_proc = proc

    def events_posted(self) -> None:
        """Wait until the recorder has posted the burst's Events (Created and Deployed of
        every resource: it posts them at DEPLOYPLANE_EVENT_QPS behind the writes that make
        the resources Ready); seconds from the first create until the last is there."""
        core = client.CoreV1Api(self.api)
        want = 2 * self.n

        def posted() -> int:
            listing = core.list_namespaced_event(
                self.namespace, field_selector="involvedObject.kind=AgentDeployment"
            )
            return sum(e.reason in ("Created", "Deployed") for e in listing.items)

        wait_until(
            lambda: posted() >= want, within=self.args.timeout * 2, what="the Events", every=2.0
        )
        seconds = time.monotonic() - self.apply_began
        log(f"converge: all {want} Events posted {seconds:.0f} s after the first create")
        self.figure("events_posted_1000_s", seconds, "s", "<=", 300, digits=0)

    def latency(self) -> None:
        """apply -> POST for single applies, one at a time, into the operator that holds
        the N Ready resources: what a user sees after `kubectl apply` on a busy cluster."""
        samples = self.args.latency_samples
        log(f"latency: {samples} single applies, one at a time")
        sent: dict[str, float] = {}
        for i in range(samples):
            name = f"agent-single-{i:03d}"
            sent[name] = time.time()
            self.custom.create_namespaced_custom_object(
                GROUP, VERSION, self.namespace, PLURAL, self.resource(name)
            )
            wait_until(
                lambda name=name: bool(self.emulator.deployments_named(name)),
                within=self.args.timeout,
                what=f"the POST of {name}",
                every=0.005,
            )
            time.sleep(0.2)  # single applies, not a burst
        latencies = self.apply_to_post(sent, name_contains="agent-single-")
        self.total += samples
        # Settle them before the resume phase, which requires a restart to change nothing.
        ready = ReadyWatch(self.custom, self.namespace, self.total)
        ready.start()
        if not ready.done.wait(self.args.timeout):
            raise TimeoutError(f"latency: only {len(ready.ready)}/{self.total} Ready")
        self.figure("apply_to_post_p50_ms", percentile(latencies, 50), "ms", "<=", 100)
        self.figure("apply_to_post_p99_ms", percentile(latencies, 99), "ms", "<=", 100)

    def apply_to_post(self, sent: dict[str, float], name_contains: str = "agent-") -> list[float]:
        async def created() -> dict[str, float]:
            async with ControlPlaneClient(
                self.emulator.url, api_key=API_KEY, tenant_id=WORKSPACE
            ) as cp:
                return {
                    dep.name: dep.created_at.timestamp()
                    async for dep in cp.iter_deployments(name_contains=name_contains)
                }

        at = asyncio.run(created())
        missing = set(sent) - set(at)
        if missing:
            raise RuntimeError(f"{len(missing)} resources have no deployment")
        return [(at[name] - sent[name]) * 1000 for name in sent]

    def first_passes(self, proc: OperatorProcess) -> float:
        """Start `proc` over N Ready resources; seconds until every daemon's first pass
        (one full observation = one `GET /v2/deployments/{id}` each) is done."""
        self.emu.reset()
        began = time.monotonic()
        proc.start()
        route = "GET /v2/deployments/{deployment_id}"
        wait_until(
            lambda: self.emu.count(route) >= self.total,
            within=self.args.timeout,
            what="every daemon's first pass",
            every=0.1,
        )
        return time.monotonic() - began

    def steady(self) -> None:
        window = self.args.steady_window
        log(f"steady: operator restarted with a resync of {self.args.resync:g} s")
        proc = self.operator(self.args.resync, "steady")
        self.first_passes(proc)
        time.sleep(2.0)  # the last first passes' answers, then nothing but resyncs
        log(f"steady: watching writes and calls for {window:g} s")
        since = dt.datetime.now(dt.UTC)
        self.emu.reset()
        time.sleep(window)
        writes = self.cluster.count_writes(since, namespace=self.namespace)
        stats = self.emu.stats()
        resyncs = self.total * window / self.args.resync
        log(f"steady: writes {writes}, emulator {stats}")
        self.figure(
            "steady_k8s_writes_per_min", sum(writes.values()) * 60 / window, "writes", "=", 0
        )
        self.figure(
            "steady_api_calls_per_cr_per_resync",
            stats["total"] / resyncs,
            "calls",
            "<=",
            1,
            digits=2,
        )

    def resume(self) -> None:
        log("resume: stopping the operator and starting it again")
        self.converge_proc.stop()
        proc = self.operator(600.0, "resume")
        since = dt.datetime.now(dt.UTC)
        resume_s = self.first_passes(proc)
        assert proc.process is not None
        time.sleep(3.0)  # anything a pass would still write would land by now
        stats = self.emu.stats()
        writes = self.cluster.count_writes(since, namespace=self.namespace)
        rss = vm_rss_mb(proc.process.pid)
        log(f"resume: {resume_s:.1f} s; emulator {stats}; k8s writes {writes}; RSS {rss:.0f} MB")
        if "POST /v2/deployments" in stats["requests"] or writes:
            raise RuntimeError("resume created or wrote something")
        self.figure("resume_1000_s", resume_s, "s", "<=", 60)
        self.resume_rss_mb = rss  # once it has checked every resource (bench/shardphase.py)
        proc.stop()

    def run(self) -> list[Figure]:
        with self.stack:
            self.start()
            self.converge()
            if self.args.converge_only:
                return self.figures
            self.events_posted()
            self.latency()
            self.resume()
            self.steady()
        return self.figures


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1000, help="custom resources (default 1000)")
    parser.add_argument("--poll-interval", type=float, default=2.0)
    parser.add_argument("--poll-max", type=float, default=30.0)
    parser.add_argument(
        "--resync", type=float, default=30.0, help="operator resync during the steady window"
    )
    parser.add_argument(
        "--steady-window", type=float, default=60.0, help="seconds (a multiple of --resync)"
    )
    parser.add_argument("--apply-concurrency", type=int, default=16)
    parser.add_argument(
        "--latency-samples", type=int, default=50, help="single applies timed apply -> POST"
    )
    parser.add_argument("--timeout", type=float, default=300.0, help="bound of each phase")
    parser.add_argument("--workdir", type=Path, default=None, help="keep logs here")
    parser.add_argument(
        "--converge-only", action="store_true", help="stop after the converge phase (profiling)"
    )
    return parser.parse_args(argv)


@contextlib.contextmanager
def _workdir(path: Path | None) -> Iterator[Path]:
    if path is not None:
        path.mkdir(parents=True, exist_ok=True)
        yield path
        return
    with tempfile.TemporaryDirectory(prefix="deployplane-bench-") as tmp:
        yield Path(tmp)


def _exit_on_sigterm(signum: int, frame: object) -> None:
    raise SystemExit(128 + signum)  # unwinds the ExitStack: every child process stops


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    signal.signal(signal.SIGTERM, _exit_on_sigterm)
    with _workdir(args.workdir) as workdir:
        figures = Bench(args, workdir).run()
    for fig in figures:
        print(fig.line(), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
