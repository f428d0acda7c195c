"""What one status write costs the kube-apiserver, by the shape of the status: the floor
controller's, the operator's, and the operator's before Reconciling and Stalled became
abnormal-true (absent unless True). Not a target: evidence for `docs/benchmarks.md`.

    DEPLOYPLANE_TOOLS_BIN=$(bash tools/k8s/build.sh path) .venv/bin/python -m bench.status_cost

A fresh dev cluster (audit log on, as in `bench/operator.py`); N resources per shape, each
written twice (the first status write: the id with the first conditions; the second:
Ready) as merge patches of the status subresource by the operator's ServiceAccount, 16 at
a time. Printed: the apiserver's CPU milliseconds per write (utime + stime from /proc),
each shape measured twice in the order A B C C B A so that drift cancels. The shapes are
what the operator wrote for the bench's AgentDeployment (captured from
`tests/integration/test_operator_reconcile.py`), with fresh ids and times.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import uuid
from collections.abc import Callable, Iterator
from typing import Any

from bench.floor_controller import condition, first_status, ready_status
from bench.operator import PLURAL, Bench, _workdir, agent_deployment, cpu_seconds, parse_args
from deployplane.kube.api import KubernetesApi

Shape = Callable[[bool], dict[str, Any]]
"""The status patch of a write: the first one (False) or the Ready one (True)."""


def _condition(type_: str, value: str, message: str = "") -> dict[str, Any]:
    status, reason = value.split("/")
    return condition(type_, status, reason, 1, message)


def floor(ready: bool) -> dict[str, Any]:
    """`bench/floor_controller.py`'s own two writes."""
    return ready_status(1) if ready else first_status(str(uuid.uuid4()), 1)


def operator(*, idle_conditions: bool) -> Shape:
    """The operator's two writes; `idle_conditions`: with Reconciling and Stalled False
    when not True (before they became abnormal-true)."""

    def shape(ready: bool) -> dict[str, Any]:
        revision = str(uuid.uuid4())
        created = f"Revision {revision} was just created"
        if not ready:
            conditions = [
                _condition("Ready", "False/Creating", created),
                _condition("Synced", "True/ReconcileSuccess"),
                _condition("Reconciling", "True/Creating", created),
            ]
            if idle_conditions:
                conditions.append(_condition("Stalled", "False/ReconcileSuccess"))
            return {
                "observedGeneration": 1,
                "conditions": conditions,
                "deploymentId": str(uuid.uuid4()),
                "latestRevisionId": revision,
                "deploymentStatus": "AWAITING_DATABASE",
                "revision": {"id": revision},
            }
        conditions = [
            _condition("Ready", "True/Deployed", f"Revision {revision} is deployed"),
            _condition("Synced", "True/ReconcileSuccess"),
        ]
        if idle_conditions:
            conditions.append(_condition("Reconciling", "False/ReconcileSuccess"))
            conditions.append(_condition("Stalled", "False/ReconcileSuccess"))
        return {
            "conditions": conditions,
            "activeRevisionId": revision,
            "deploymentStatus": "READY",
            "imageVersion": "registry.example.com/agent:1",
            "revision": {"status": "DEPLOYED", "imageUri": "registry.example.com/agent:1"},
        }

    return shape


SHAPES: dict[str, Shape] = {
    "floor": floor,
    "operator": operator(idle_conditions=False),
    "operator, Reconciling/Stalled False": operator(idle_conditions=True),
}


def _names(prefix: str, n: int) -> Iterator[str]:
    return (f"{prefix}-{i:05d}" for i in range(n))


async def measure(bench: Bench, n: int) -> dict[str, list[float]]:
    os.environ["KUBECONFIG"] = str(bench.kubeconfig)
    kube = KubernetesApi.from_environment()
    apiserver = next(s.pid for s in bench.cluster.server_processes if s.name == "kube-apiserver")
    order = [*SHAPES, *reversed(SHAPES)]
    for run, _label in enumerate(order):
        for name in _names(f"s{run}", n):
            bench.custom.create_namespaced_custom_object(
                "deployplane.io", "v1alpha1", bench.namespace, PLURAL, agent_deployment(name)
            )
    limit = asyncio.Semaphore(16)

    async def write(name: str, status: dict[str, Any]) -> None:
        async with limit:
            await kube.patch_status(PLURAL, bench.namespace, name, status)

    results: dict[str, list[float]] = {label: [] for label in SHAPES}
    try:
        for run, label in enumerate(order):
            names = list(_names(f"s{run}", n))
            before = cpu_seconds(apiserver)
            for ready in (False, True):
                await asyncio.gather(*(write(name, SHAPES[label](ready)) for name in names))
            await asyncio.sleep(0.5)  # the watch cache's and etcd's share of the last ones
            per_write = (cpu_seconds(apiserver) - before) * 1000 / (2 * n)
            results[label].append(per_write)
            print(f"{label:40s} {per_write:5.2f} ms of apiserver CPU per write", flush=True)
    finally:
        await kube.aclose()
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=500, help="resources per shape and run")
    args = parser.parse_args(argv)
    with _workdir(None) as workdir:
        bench = Bench(parse_args(["--n", str(args.n)]), workdir)
        with bench.stack:
            bench.start()
            results = asyncio.run(measure(bench, args.n))
    print("== mean of the two runs of each shape", flush=True)
    for label, values in results.items():
        print(f"{label:40s} {sum(values) / len(values):5.2f} ms per write", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
