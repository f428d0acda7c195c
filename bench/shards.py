"""Label shards at scale, converge-based: one operator over N
AgentDeployments, then two label shards over N others, on a dev cluster of its own
against the emulator. Run on its own; `make bench-scale` does not call it (its shard
phase, bench/shardphase.py, has the shards take over the scale run's resources instead).

    DEPLOYPLANE_TOOLS_BIN=$(bash tools/k8s/build.sh path) .venv/bin/python -m bench.shards --n 1000

Phases, each in its own namespace, one after the other (the operators of a phase are
stopped before the next starts, so none shares the 2 cores with another phase's):

1. single: one `deployplane operator run` (no shard) over N resources, half labelled
   `sharding.fluxcd.io/key: a`, half `b` (labels it ignores); its VmRSS once all are
   Ready.
2. labels: `--shard a` and `--shard b` over N more, split the same way. Printed:
   `shard_rss_ratio`, the larger shard's VmRSS once all are Ready over the single
   operator's (goal <= 0.6), and `shard_duplicate_creates`, the deployments the
   control plane holds beyond one per resource (must be 0).
3. `--uid-ranges` (needs the apiserver started with ShardedListAndWatch=true, which
   this bench then does): the same N split by the apiserver's sharded list and watch
   (KEP-5866, alpha in 1.36) over `metadata.uid`, each shard a `kopf run` of the
   operator's handlers plus `bench/shardrange_hook.py`, which sets Kopf's public
   `settings.watching.shard_selectors`; and, to compare like with like, label shards
   started the same way (`kopf run`, DEPLOYPLANE_SHARD). Printed as `SHARDS` lines
   (evidence, no goal).

`run(args)` returns the figures (`main` prints them as BENCH lines).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import yaml
from kubernetes import client
from tests.support.operator_harness import (
    GROUP,
    REPO,
    VERSION,
    Emulator,
    OperatorProcess,
    operator_env,
    ready_for_generation,
)

from bench import shardphase
from bench.operator import agent_deployment, log, vm_rss_mb
from bench.report import Figure
from deployplane.devcluster import DevCluster, find_tools
from deployplane.devcluster.manifests import Applier
from deployplane.kube.paths import SHARD_LABEL

PLURAL = "agentdeployments"
FULL_RANGE = 1 << 64
GATE = "ShardedListAndWatch=true"


@dataclass
class KopfProcess(OperatorProcess):
    """`kopf run` of the operator's handlers plus the bench's shard-range hook."""

    modules: tuple[str, ...] = ("deployplane.controller.handlers", "bench.shardrange_hook")

    def start(self) -> KopfProcess:
        log_file = self.log_path.open("ab")
        modules = [a for m in self.modules for a in ("-m", m)]
        argv = [sys.executable, "-m", "kopf", "run", "--standalone", "-n", self.namespace]
        self.process = subprocess.Popen(
            [*argv, *modules],
            env={**os.environ, **self.env, "PYTHONPATH": str(REPO)},
            stdout=log_file,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        return self


def ready_held(port: int) -> int:
    """How many AgentDeployments the operator on metrics `port` holds Ready."""
    return shardphase.ready_held(httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=10).text)


def uid_range(index: int, count: int) -> str:
    """The `shardSelector` of the index-th of `count` equal ranges of the uid hash."""
    start, end = FULL_RANGE * index // count, FULL_RANGE * (index + 1) // count
    bound = "0x10000000000000000" if end == FULL_RANGE else f"0x{end:016x}"
    return f"shardRange(object.metadata.uid, '0x{start:016x}', '{bound}')"


Starter = Callable[[str, str], OperatorProcess]
"""(namespace, tag) -> a started operator process."""


@dataclass
class Phase:
    name: str
    converge_s: float = 0.0
    rss_mb: dict[str, float] = field(default_factory=dict)
    held: dict[str, int] = field(default_factory=dict)
    """Resources each process holds Ready (its metrics): how the work was split."""
    duplicates: int = 0


class ShardBench:
    def __init__(self, args: argparse.Namespace, workdir: Path) -> None:
        self.args = args
        self.n: int = args.n
        self.workdir = workdir
        self.stack = contextlib.ExitStack()
        self.ports: dict[str, int] = {}

    def start(self) -> None:
        gates = {"DEPLOYPLANE_APISERVER_FEATURE_GATES": GATE} if self.args.uid_ranges else {}
        with _environ(gates):
            self.cluster = self.stack.enter_context(
                DevCluster(self.workdir / "cluster", controller_manager=False, tools=find_tools())
            )
        self.api = self.stack.enter_context(self.cluster.admin())
        self.api.configuration.connection_pool_maxsize = 16
        crds = [
            yaml.safe_load(p.read_text())
            for p in sorted((REPO / "crds").glob("*.deployplane.io.yaml"))
        ]
        Applier(self.api).apply(crds)
        self.custom = client.CustomObjectsApi(self.api)
        self.emulator = Emulator(
            self.workdir / "emulator", step_seconds=0, strict=False, proxied=False
        ).start()
        self.stack.callback(self.emulator.stop)

    def namespace(self, name: str) -> str:
        client.CoreV1Api(self.api).create_namespace(
            client.V1Namespace(metadata=client.V1ObjectMeta(name=name))
        )
        return name

    def metrics(self, tag: str) -> dict[str, str]:
        self.ports[tag] = shardphase.free_port()
        return {
            "POD_NAME": tag,
            "DEPLOYPLANE_METRICS_PORT": str(self.ports[tag]),
            "DEPLOYPLANE_METRICS_ADDR": "127.0.0.1",
        }

    def operator(self, namespace: str, tag: str, *args: str) -> OperatorProcess:
        env = operator_env(self.emulator, self.cluster.kubeconfig, **self.metrics(tag))
        proc = OperatorProcess(namespace, env, self.workdir / f"{tag}.log", extra_args=args)
        self.stack.callback(proc.stop)
        return proc.start()

    def kopf(
        self, namespace: str, tag: str, selector: str | None = None, shard: str | None = None
    ) -> OperatorProcess:
        """`kopf run` of the handlers: with the uid-range hook (`selector`), or as a label
        shard (`shard`): the same entry point for both, so their memory compares."""
        env = operator_env(
            self.emulator,
            self.cluster.kubeconfig,
            **self.metrics(tag),
            DEPLOYPLANE_NAMESPACES=namespace,
            DEPLOYPLANE_SHARD=shard or "",
            BENCH_SHARD_SELECTOR=selector or "",
        )
        modules = KopfProcess.modules if selector else KopfProcess.modules[:1]
        proc = KopfProcess(namespace, env, self.workdir / f"{tag}.log", modules=modules)
        self.stack.callback(proc.stop)
        return proc.start()

    def apply(self, namespace: str, prefix: str, labelled: bool) -> None:
        def body(i: int) -> dict[str, Any]:
            doc = agent_deployment(f"{prefix}-{i:05d}")
            if labelled:
                doc["metadata"]["labels"] = {SHARD_LABEL: "ab"[i % 2]}
            return doc

        with ThreadPoolExecutor(16) as pool:
            list(
                pool.map(
                    lambda i: self.custom.create_namespaced_custom_object(
                        GROUP, VERSION, namespace, PLURAL, body(i)
                    ),
                    range(self.n),
                )
            )

    def wait_ready(self, namespace: str) -> None:
        deadline = time.monotonic() + self.args.timeout
        while True:
            items = self.custom.list_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL)
            ready = sum(ready_for_generation(o) for o in items["items"])
            if ready >= self.n:
                return
            if time.monotonic() > deadline:
                raise TimeoutError(f"{namespace}: {ready}/{self.n} Ready in {self.args.timeout}s")
            time.sleep(2)

    def phase(self, name: str, labelled: bool, processes: Sequence[tuple[str, Starter]]) -> Phase:
        """Start the processes (tag, starter), apply N resources, wait all Ready, read
        each process's VmRSS, stop them."""
        namespace = self.namespace(name)
        procs = {tag: start(namespace, tag) for tag, start in processes}
        time.sleep(self.args.settle)  # listed and watching
        began = time.monotonic()
        self.apply(namespace, name, labelled)
        self.wait_ready(namespace)
        result = Phase(name, time.monotonic() - began)
        time.sleep(self.args.settle)
        for tag, proc in procs.items():
            assert proc.process is not None
            result.rss_mb[tag] = vm_rss_mb(proc.process.pid)
            result.held[tag] = ready_held(self.ports[tag])
            proc.stop()
        names = [d["name"] for d in self.emulator.all_deployments() if d["name"].startswith(name)]
        result.duplicates = len(names) - len(set(names))
        log(f"{name}: {self.n} Ready in {result.converge_s:.1f}s; RSS {result.rss_mb}")
        log(f"{name}: resources held Ready by each process {result.held}")
        return result

    def run(self) -> list[Figure]:
        with self.stack:
            self.start()
            single = self.phase("single", True, [("single", self.operator)])
            shards = self.phase(
                "labels",
                True,
                [
                    ("shard-a", lambda ns, tag: self.operator(ns, tag, "--shard", "a")),
                    ("shard-b", lambda ns, tag: self.operator(ns, tag, "--shard", "b")),
                ],
            )
            figures = [
                Figure(
                    "shard_rss_ratio",
                    max(shards.rss_mb.values()) / single.rss_mb["single"],
                    "x",
                    "<=",
                    0.6,
                    2,
                ),
                Figure("shard_duplicate_creates", shards.duplicates, "count", "=", 0, 0),
            ]
            lines = [
                f"SHARDS single_rss_mb_{self.n} {single.rss_mb['single']:.0f} MB",
                f"SHARDS label_shard_rss_mb_{self.n} {max(shards.rss_mb.values()):.0f} MB",
                f"SHARDS single_converge_{self.n}_s {single.converge_s:.1f} s",
                f"SHARDS label_shards_converge_{self.n}_s {shards.converge_s:.1f} s",
            ]
            if self.args.uid_ranges:
                kopf_labels = self.phase(
                    "kopflabels",
                    True,
                    [(f"kopf-{s}", lambda ns, tag, s=s: self.kopf(ns, tag, shard=s)) for s in "ab"],
                )
                uids = self.phase(
                    "uids",
                    False,
                    [
                        (f"range-{i}", lambda ns, tag, i=i: self.kopf(ns, tag, uid_range(i, 2)))
                        for i in range(2)
                    ],
                )
                lines += [
                    f"SHARDS kopf_run_label_shard_rss_mb_{self.n} "
                    f"{max(kopf_labels.rss_mb.values()):.0f} MB",
                    f"SHARDS kopf_run_label_shards_converge_{self.n}_s "
                    f"{kopf_labels.converge_s:.1f} s",
                    f"SHARDS uid_range_shard_rss_mb_{self.n} {max(uids.rss_mb.values()):.0f} MB",
                    f"SHARDS uid_range_converge_{self.n}_s {uids.converge_s:.1f} s",
                    f"SHARDS uid_range_duplicate_creates {uids.duplicates} count",
                ]
        for line in lines:
            print(line, flush=True)
        return figures


@contextlib.contextmanager
def _environ(extra: dict[str, str]) -> Iterator[None]:
    saved = {k: os.environ.get(k) for k in extra}
    os.environ.update(extra)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1000, help="resources per phase")
    parser.add_argument("--timeout", type=float, default=600.0, help="bound of each converge")
    parser.add_argument("--settle", type=float, default=5.0, help="seconds before and after")
    parser.add_argument("--uid-ranges", action="store_true", help="also the apiserver's shards")
    parser.add_argument("--workdir", type=Path, default=None, help="keep logs here")
    return parser.parse_args(argv)


def run(args: argparse.Namespace) -> list[Figure]:
    """The figures (`shard_rss_ratio`, `shard_duplicate_creates`) of the converge-based
    comparison."""
    if args.workdir is not None:
        args.workdir.mkdir(parents=True, exist_ok=True)
        return ShardBench(args, args.workdir).run()
    with tempfile.TemporaryDirectory(prefix="deployplane-shards-") as tmp:
        return ShardBench(args, Path(tmp)).run()


def main(argv: list[str] | None = None) -> int:
    for fig in run(parse_args(argv)):
        print(fig.line(), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
