"""The shard phase of `make bench-scale` (bench/scale.py): two label shards take over
the resources a single operator held.

The scale run labels its AgentDeployments half `sharding.fluxcd.io/key: a`, half `b`
(`shard_key`); the single operator, started with neither `--shard` nor
`--shard-default`, reconciles them all. After its resume (restarted over every Ready
resource until each has been checked; its VmRSS then), it is stopped, and
`deployplane operator run --shard a` and `--shard b` are started together over the same
resources, with the resume's environment. Once each has checked all of its own (its
metrics hold them Ready, and the emulator has answered one `GET /v2/deployments/{id}`
per resource), each one's VmRSS is read. Figures:

- `shard_rss_ratio`: the larger shard's VmRSS over the single operator's at the end of
  its resume: like for like, both processes just after a resume over Ready resources
  (goal <= 0.6);
- `shard_duplicate_creates`: the deployments the control plane holds beyond one per
  resource, counted through the emulator's API (must be 0);
- `shard_takeover_k8s_writes`: the Kubernetes writes the shards made while taking over
  (the audit log, by the operator's user; must be 0, like the resume's).

The pure computations are here (unit-tested); the process handling is `ShardTakeover`,
which drives any `Bench` (bench/operator.py) whose single operator has resumed: the
scale run hands it its own (bench/scale.py imports this module, never the reverse).
"""

from __future__ import annotations

import datetime as dt
import socket
import time
import zlib
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import httpx
from tests.support.operator_harness import GROUP, VERSION, OperatorProcess

from bench.operator import PLURAL, Bench, log, vm_rss_mb, wait_until
from bench.report import Figure
from deployplane.kube.paths import SHARD_LABEL

SHARDS = ("a", "b")
SHARD_RSS_RATIO_GOAL = 0.6
READY_SERIES = 'deployplane_resources{condition="Ready",kind="AgentDeployment",status="True"}'


def shard_key(name: str) -> str:
    """The shard label value of the resource `name`: `a` or `b` by the parity of its
    trailing number (`agent-00041` -> `b`), so the bench's resources split in halves;
    by a hash of the name for a name without one."""
    tail = name.rsplit("-", 1)[-1]
    number = int(tail) if tail.isdigit() else zlib.crc32(name.encode())
    return SHARDS[number % len(SHARDS)]


def shard_rss_ratio(shard_rss_mb: Mapping[str, float], single_rss_mb: float) -> Figure:
    """`shard_rss_ratio`: the larger shard's VmRSS over the single operator's."""
    if not shard_rss_mb:
        raise ValueError("no shard RSS to compare")
    if single_rss_mb <= 0:
        raise ValueError(f"the single operator's RSS must be positive, got {single_rss_mb}")
    ratio = max(shard_rss_mb.values()) / single_rss_mb
    return Figure("shard_rss_ratio", ratio, "x", "<=", SHARD_RSS_RATIO_GOAL, 2)


def duplicate_creates(deployment_names: Iterable[str]) -> int:
    """Deployments beyond one per name (a resource's deployment carries its name)."""
    counts = Counter(deployment_names)
    return sum(count - 1 for count in counts.values())


def shard_counts(resources: Iterable[Mapping[str, Any]]) -> dict[str, int]:
    """How many of the resources each shard label value names (unlabelled: '')."""
    counts = Counter(
        ((r.get("metadata") or {}).get("labels") or {}).get(SHARD_LABEL, "") for r in resources
    )
    return dict(counts)


def ready_held(metrics_text: str) -> int:
    """The AgentDeployments an operator's /metrics says it holds Ready."""
    for line in metrics_text.splitlines():
        if line.startswith(READY_SERIES):
            return int(float(line.split()[-1]))
    return 0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def held(port: int) -> int:
    """`ready_held` of the operator serving metrics on `port`; 0 while it is not up."""
    try:
        return ready_held(httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=10).text)
    except httpx.HTTPError:
        return 0


class ShardTakeover:
    """The phase, on a bench whose single operator has resumed and stopped;
    `deployment_names` lists every deployment's name through the control plane's API."""

    def __init__(self, bench: Bench, deployment_names: Callable[[], list[str]]) -> None:
        self.bench = bench
        self.deployment_names = deployment_names
        self.ports: dict[str, int] = {}
        """Metrics port of each shard operator."""
        self.notes: list[str] = []
        """Lines for the summary besides the BENCH ones (evidence, no goal)."""

    def shard_operator(self, shard: str) -> OperatorProcess:
        """`deployplane operator run --shard SHARD`, started, with the resume's
        environment and its metrics on a port of its own (`self.ports`)."""
        self.ports[shard] = free_port()
        metrics = {
            "POD_NAME": f"shard-{shard}",
            "DEPLOYPLANE_METRICS_PORT": str(self.ports[shard]),
            "DEPLOYPLANE_METRICS_ADDR": "127.0.0.1",
        }
        return self.bench.operator(600.0, f"shard-{shard}", "--shard", shard, **metrics).start()

    def expected(self) -> dict[str, int]:
        bench = self.bench
        listing = bench.custom.list_namespaced_custom_object(
            GROUP, VERSION, bench.namespace, PLURAL
        )
        counts = shard_counts(listing["items"])
        if set(counts) != set(SHARDS):
            raise RuntimeError(f"resources by shard label: {counts}; want only {SHARDS}")
        return counts

    def run(self, single_rss_mb: float) -> list[Figure]:
        bench = self.bench
        expected = self.expected()
        log(f"shards: --shard a and --shard b taking over {expected}")
        bench.emu.reset()
        since = dt.datetime.now(dt.UTC)
        began = time.monotonic()
        procs = {s: self.shard_operator(s) for s in SHARDS}
        route = "GET /v2/deployments/{deployment_id}"
        wait_until(
            lambda: (
                all(held(self.ports[s]) >= expected[s] for s in SHARDS)
                and bench.emu.count(route) >= bench.total
            ),
            within=bench.args.timeout,
            what="each shard's first passes",
            every=0.5,
        )
        takeover_s = time.monotonic() - began
        time.sleep(3.0)  # anything a pass would still write would land by now
        rss: dict[str, float] = {}
        for shard, proc in procs.items():
            assert proc.process is not None
            rss[shard] = vm_rss_mb(proc.process.pid)
        writes = bench.cluster.count_writes(since, user=bench.user, namespace=bench.namespace)
        stats = bench.emu.stats()
        for proc in procs.values():
            proc.stop()
        names = self.deployment_names()
        log(f"shards: took over in {takeover_s:.1f} s; RSS {rss} (single {single_rss_mb:.0f})")
        log(f"shards: emulator {stats}; k8s writes {writes}; {len(names)} deployments")
        self.notes += [
            f"SHARDS single_resume_rss_mb_{bench.n} {single_rss_mb:.0f} MB",
            *(f"SHARDS shard_{s}_rss_mb_{bench.n} {rss[s]:.0f} MB" for s in SHARDS),
            f"SHARDS shard_takeover_{bench.n}_s {takeover_s:.1f} s",
        ]
        if "POST /v2/deployments" in stats["requests"]:
            log("shards: a shard created deployments while taking over")
        return [
            shard_rss_ratio(rss, single_rss_mb),
            Figure("shard_duplicate_creates", duplicate_creates(names), "count", "=", 0, 0),
            Figure("shard_takeover_k8s_writes", sum(writes.values()), "writes", "=", 0, 0),
        ]
