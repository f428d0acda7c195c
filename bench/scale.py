"""`make bench-scale`: the operator at 10,000 AgentDeployments, against its own 1,000.

    DEPLOYPLANE_TOOLS_BIN=$(bash tools/k8s/build.sh path) .venv/bin/python -m bench.scale

The 1,000 bench's machinery (`bench/operator.py`), parametrised by count, on the dev
cluster with its controller-manager and kwok nodes, and with what a platform team's
namespace holds besides the AgentDeployments: a `ControlPlaneConnection` named
`default` (and its Secret) that every resource uses, and `--listeners` Listeners, each
AgentDeployment on one of them (round robin). Two runs, each on a fresh cluster:

1. the baseline: `--baseline` (1,000) resources, converge only: the operator's CPU
   seconds per resource there;
2. the scale run: `--n` (10,000) resources: converge (`converge_10000_s`,
   `k8s_writes_per_cr_10000`, `api_calls_per_cr_10000`, `operator_rss_mb_10000`, and
   `cpu_s_per_cr_growth`, its CPU-s per resource over the baseline's), the single
   applies into the operator holding all of them (`apply_to_post_p99_ms_10000`), and
   the resume (`resume_10000_s`: restart over every Ready resource until each has been
   observed, no create and no Kubernetes write) while the emulator carries a listener
   agent's load on top of the operator's: the agent lists every page of the workspace's
   deployments (100 a page, the published list has no listener filter), round after
   round, and a probe reads single deployments by id; their p99s
   (`emulator_list_page_p99_ms_10000`, `emulator_get_p99_ms_10000`) and the
   emulator's database size after it all (`emulator_db_mb_10000`).

The Events phase (20,000 at 10/s would take over half an hour) and the steady phase of
the 1,000 bench are left out: both measure per-resource behaviour the 1,000 bench
already pins.

The resources are labelled half `sharding.fluxcd.io/key: a`, half `b` (the single
operator, started with neither `--shard` nor `--shard-default`, reconciles them all).
Last, the shard phase (bench/shardphase.py): the resumed operator stopped,
`deployplane operator run --shard a` and `--shard b` take over the same resources
together: `shard_rss_ratio` (the larger shard's VmRSS over the single operator's at the
end of its resume: both just after a resume), `shard_duplicate_creates` and
`shard_takeover_k8s_writes` (both must be 0). `--no-shards` skips it.

The converge-based shard comparison on its own cluster, and the apiserver's uid-range
shards (KEP-5866), stay in `python -m bench.shards` (not run by `make bench-scale`).

Smaller sizes for a functional check: `--n 1500 --baseline 300 --listeners 4`.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import signal
import sys
import threading
import time
import zlib
from typing import Any

import httpx
from kubernetes import client
from tests.support.operator_harness import (
    API_KEY,
    GROUP,
    VERSION,
    WORKSPACE,
    ready_for_generation,
)

from bench.operator import (
    Bench,
    _exit_on_sigterm,
    _workdir,
    agent_deployment,
    log,
    parse_args,
    percentile,
    wait_until,
)
from bench.report import Figure, verdict
from bench.shardphase import ShardTakeover, shard_key
from deployplane.api.client import ControlPlaneClient
from deployplane.kube.paths import SHARD_LABEL

CPU_GROWTH_GOAL = 1.1


def scaled_name(name: str, n: int) -> str:
    """The 1,000 bench's figure name for a run of `n`: `converge_1000_s` ->
    `converge_10000_s`, `k8s_writes_per_cr` -> `k8s_writes_per_cr_10000`."""
    if "_1000" in name:
        return name.replace("_1000", f"_{n}")
    return f"{name}_{n}"


GOALS: dict[str, tuple[str, float]] = {
    # The 1,000 bench's name -> the scale run's goal.
    "converge_1000_s": ("<=", 600),  # the 1,000's 60 s, times ten
    "k8s_writes_per_cr": ("<=", 3),
    "operator_rss_mb_1000": ("<=", 250),
    "resume_1000_s": ("<=", 60),
}


def cpu_growth(per_cr_at_n: float, per_cr_at_baseline: float) -> Figure:
    """`cpu_s_per_cr_growth`: the operator's CPU-s per resource at N over the baseline's
    (goal <= 1.1: nothing in it grows faster than the work)."""
    if per_cr_at_baseline <= 0:
        raise ValueError(f"baseline CPU per resource must be positive, got {per_cr_at_baseline}")
    ratio = per_cr_at_n / per_cr_at_baseline
    return Figure("cpu_s_per_cr_growth", ratio, "x", "<=", CPU_GROWTH_GOAL, 2)


class EmulatorLoad:
    """A listener agent's listing (every page, round after round) and a probe of single
    GETs (one every `probe_every` s) on the emulator, each request timed."""

    def __init__(self, url: str, ids: list[str], probe_every: float = 0.02) -> None:
        self.headers = {"X-Api-Key": API_KEY, "X-Tenant-Id": WORKSPACE}
        self.url = url
        self.ids = ids
        self.probe_every = probe_every
        self.pages: list[float] = []
        self.gets: list[float] = []
        self.stopping = threading.Event()
        self.threads = [
            threading.Thread(target=self._list_rounds, daemon=True),
            threading.Thread(target=self._probe, daemon=True),
        ]

    def __enter__(self) -> EmulatorLoad:
        for thread in self.threads:
            thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stopping.set()
        for thread in self.threads:
            thread.join(timeout=60)

    def _timed(self, http: httpx.Client, path: str, **params: Any) -> tuple[float, Any]:
        began = time.perf_counter()
        response = http.get(path, params=params)
        response.raise_for_status()
        return (time.perf_counter() - began) * 1000, response.json()

    def _list_rounds(self) -> None:
        with httpx.Client(base_url=self.url, headers=self.headers, timeout=60) as http:
            while not self.stopping.is_set():
                offset = 0
                while not self.stopping.is_set():
                    ms, page = self._timed(http, "/v2/deployments", limit=100, offset=offset)
                    self.pages.append(ms)
                    if len(page["resources"]) < 100:
                        break
                    offset += 100

    def _probe(self) -> None:
        with httpx.Client(base_url=self.url, headers=self.headers, timeout=60) as http:
            while not self.stopping.wait(self.probe_every):
                ms, _ = self._timed(http, f"/v2/deployments/{random.choice(self.ids)}")
                self.gets.append(ms)


class ScaleBench(Bench):
    workloads = True

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.notes: list[str] = []
        """Lines for the summary besides the BENCH ones (evidence, no goal)."""

    def figure(self, *args: Any, **kwargs: Any) -> None:
        """The 1,000 bench's figure, named for N and with its goal at N (`GOALS`)."""
        name, value, unit, op, goal, *rest = args
        op, goal = GOALS.get(name, (op, goal))
        super().figure(scaled_name(name, self.n), value, unit, op, goal, *rest, **kwargs)

    def resource(self, name: str) -> dict[str, Any]:
        body = agent_deployment(name)
        body["metadata"]["labels"] = {SHARD_LABEL: shard_key(name)}
        listener = f"listener-{zlib.crc32(name.encode()) % self.args.listeners:02d}"
        body["spec"]["sourceConfig"]["listenerRef"] = {"name": listener}
        return body

    def start(self) -> None:
        super().start()
        core = client.CoreV1Api(self.api)
        core.create_namespaced_secret(
            self.namespace,
            client.V1Secret(
                metadata=client.V1ObjectMeta(name="control-plane-key"),
                string_data={"apiKey": API_KEY},
            ),
        )
        self._create("controlplaneconnections", "ControlPlaneConnection", "default", {
            "url": self.emulator.url,
            "tenantId": WORKSPACE,
            "apiKeySecretRef": {"name": "control-plane-key", "key": "apiKey"},
        })  # fmt: skip

    def _create(self, plural: str, kind: str, name: str, spec: dict[str, Any]) -> None:
        body = {
            "apiVersion": f"{GROUP}/{VERSION}",
            "kind": kind,
            "metadata": {"name": name},
            "spec": spec,
        }
        self.custom.create_namespaced_custom_object(GROUP, VERSION, self.namespace, plural, body)

    def listeners(self) -> None:
        """The Listeners, created once the operator runs; waits until all are Ready."""
        names = [f"listener-{i:02d}" for i in range(self.args.listeners)]
        for name in names:
            spec = {"computeType": "k8s", "computeId": name, "computeConfig": {}}
            self._create("listeners", "Listener", name, spec)

        def ready() -> bool:
            listing = self.custom.list_namespaced_custom_object(
                GROUP, VERSION, self.namespace, "listeners"
            )
            return sum(map(ready_for_generation, listing["items"])) == len(names)

        wait_until(ready, within=self.args.timeout, what="the Listeners Ready")
        log(f"{len(names)} Listeners Ready")

    def timed_apply(self, phase: str, controller: str) -> Any:
        if phase == "converge":
            self.listeners()
        return super().timed_apply(phase, controller)

    def converge(self) -> None:
        super().converge()
        self.cpu_per_cr = self.controller_cpu_s / self.n
        per_cr_ms = self.cpu_per_cr * 1000
        log(f"converge: operator {self.controller_cpu_s:.1f} CPU-s, {per_cr_ms:.2f} ms a resource")

    def _deployments(self, field: str) -> list[str]:
        async def values() -> list[str]:
            async with ControlPlaneClient(
                self.emulator.url, api_key=API_KEY, tenant_id=WORKSPACE
            ) as cp:
                return [str(getattr(dep, field)) async for dep in cp.iter_deployments()]

        return asyncio.run(values())

    def deployment_ids(self) -> list[str]:
        return self._deployments("id")

    def deployment_names(self) -> list[str]:
        """Every deployment's name, through the control plane's API (all pages)."""
        return self._deployments("name")

    def first_passes(self, proc: Any) -> float:
        """As the 1,000 bench's, less the probe's own GETs of single deployments."""
        self.emu.reset()
        probed = len(self.load.gets)  # the probe's GETs before the reset
        began = time.monotonic()
        proc.start()
        route = "GET /v2/deployments/{deployment_id}"
        wait_until(
            lambda: self.emu.count(route) - (len(self.load.gets) - probed) >= self.total,
            within=self.args.timeout,
            what="every resource's first pass",
            every=0.2,
        )
        return time.monotonic() - began

    def resume(self) -> None:
        with EmulatorLoad(self.emulator.url, self.deployment_ids()) as self.load:
            super().resume()
        log(f"emulator under load: {len(self.load.pages)} list pages, {len(self.load.gets)} GETs")
        self.figure("emulator_list_page_p99_ms", percentile(self.load.pages, 99), "ms", "<=", 100)
        self.figure("emulator_get_p99_ms", percentile(self.load.gets, 99), "ms", "<=", 50)
        db = sum(f.stat().st_size for f in (self.workdir / "emulator").glob("controlplane.db*"))
        # Ours: 50 KB a deployment (with its revision) at most.
        self.figure("emulator_db_mb", db / 2**20, "MB", "<=", round(self.total * 50 / 1024))

    def run(self) -> list[Figure]:
        with self.stack:
            self.start()
            self.converge()
            if self.args.converge_only:
                return self.figures
            self.latency()
            self.resume()
            if not self.args.no_shards:
                # Named without N (`shard_rss_ratio`, ...), not for N as `self.figure` would.
                takeover = ShardTakeover(self, self.deployment_names)
                for fig in takeover.run(self.resume_rss_mb):
                    self.figures.append(fig)
                    log(fig.line())
                self.notes += takeover.notes
        return self.figures


def scale_args(argv: list[str] | None) -> argparse.Namespace:
    extra = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    extra.add_argument(
        "--baseline", type=int, default=1000, help="resources of the baseline (0: none)"
    )
    extra.add_argument("--listeners", type=int, default=10)
    extra.add_argument("--no-shards", action="store_true", help="skip the shard phase")
    ours, rest = extra.parse_known_args(argv)
    args = parse_args(["--n", "10000", "--timeout", "1200", *rest])
    return argparse.Namespace(**vars(args), **vars(ours))


def main(argv: list[str] | None = None) -> int:
    args = scale_args(argv)
    signal.signal(signal.SIGTERM, _exit_on_sigterm)
    began = time.monotonic()
    with _workdir(args.workdir) as workdir:
        base: ScaleBench | None = None
        if args.baseline:
            log(f"baseline: {args.baseline} resources, converge only")
            base_args = argparse.Namespace(
                **{**vars(args), "n": args.baseline, "converge_only": True}
            )
            (workdir / "baseline").mkdir(exist_ok=True)
            base = ScaleBench(base_args, workdir / "baseline")
            base.run()
        log(f"scale: {args.n} resources")
        (workdir / "scale").mkdir(exist_ok=True)
        scale = ScaleBench(args, workdir / "scale")
        figures = scale.run()
        if base is not None:
            figures.append(cpu_growth(scale.cpu_per_cr, base.cpu_per_cr))
    lines = [fig.line() for fig in figures]
    print(f"== BENCH summary ({time.monotonic() - began:.0f} s)", flush=True)
    for line in [*lines, *scale.notes]:
        print(line, flush=True)
    print(verdict(lines), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
