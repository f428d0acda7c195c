"""Reliability at full scale: crash, faults, outage, HA, secrets.

Starts a dev cluster (etcd + kube-apiserver, `make tools`), applies the CRDs and the
Kopf peering CRD, and runs the scenarios of `tests/support/reliability_scenarios.py`
(the CI tests run the same code scaled down), each in its own namespace, printing its
figures. Exits 1 if any property is violated. Everything is bounded; servers listen on
127.0.0.1 only.

    DEPLOYPLANE_TOOLS_BIN=$(bash tools/k8s/build.sh path) \\
        .venv/bin/python -m bench.reliability [--only crash,faults,outage,ha,secrets]
        [--crash-crs 50] [--kills 10] [--fault-crs 100] [--error-rate 0.2]
        [--latency-ms 200] [--outage-crs 20] [--outage-seconds 120] [--ha-crs 20]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from kubernetes import client  # noqa: E402
from tests.support.reliability_scenarios import (  # noqa: E402
    Report,
    Stage,
    crash,
    crd_documents,
    faults,
    ha,
    outage,
    peering_crd,
    secrets_hygiene,
)

from deployplane.devcluster import DevCluster, find_tools  # noqa: E402
from deployplane.devcluster.manifests import Applier  # noqa: E402

SCENARIOS = ("crash", "faults", "outage", "ha", "secrets")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--only", default=",".join(SCENARIOS), help="comma-separated scenarios")
    parser.add_argument("--crash-crs", type=int, default=50)
    parser.add_argument("--kills", type=int, default=10)
    parser.add_argument("--fault-crs", type=int, default=100)
    parser.add_argument("--error-rate", type=float, default=0.2)
    parser.add_argument("--latency-ms", type=float, default=200)
    parser.add_argument("--outage-crs", type=int, default=20)
    parser.add_argument("--outage-seconds", type=float, default=120)
    parser.add_argument("--ha-crs", type=int, default=20)
    parser.add_argument("--ha-lifetime", type=int, default=10, help="--peering-lifetime (s)")
    parser.add_argument("--within", type=float, default=600, help="bound per wait (s)")
    args = parser.parse_args()
    chosen = [s.strip() for s in args.only.split(",") if s.strip()]
    unknown = set(chosen) - set(SCENARIOS)
    if unknown:
        parser.error(f"unknown scenarios: {sorted(unknown)}")

    runs: dict[str, Callable[[Stage], Report]] = {
        "crash": lambda st: crash(st, count=args.crash_crs, kills=args.kills, within=args.within),
        "faults": lambda st: faults(
            st,
            count=args.fault_crs,
            error_rate=args.error_rate,
            latency_ms=args.latency_ms,
            within=args.within,
        ),
        "outage": lambda st: outage(
            st, count=args.outage_crs, seconds=args.outage_seconds, within=args.within
        ),
        "ha": lambda st: ha(st, count=args.ha_crs, lifetime=args.ha_lifetime, within=args.within),
        "secrets": lambda st: secrets_hygiene(st, within=args.within),
    }
    failed: list[str] = []
    with (
        tempfile.TemporaryDirectory(prefix="deployplane-reliability-") as tmp,
        DevCluster(tools=find_tools()) as cluster,
        cluster.admin() as api,
    ):
        Applier(api).apply([*crd_documents(), peering_crd()])
        core = client.CoreV1Api(api)
        for name in chosen:
            namespace = f"reliability-{name}-{uuid.uuid4().hex[:6]}"
            core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=namespace)))
            workdir = Path(tmp) / name
            workdir.mkdir()
            started = time.monotonic()
            report = runs[name](Stage(api, cluster.kubeconfig, namespace, workdir))
            report.figures["scenario wall time (s)"] = round(time.monotonic() - started, 1)
            print("\n".join(report.lines()), flush=True)
            if report.violations:
                failed.append(name)
    print(f"\nviolated: {', '.join(failed)}" if failed else "\nall scenarios hold")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
