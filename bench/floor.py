"""The floor: the converge measure for the leanest controller, the yardstick of
`operator_floor_ratio`.

    DEPLOYPLANE_TOOLS_BIN=$(bash tools/k8s/build.sh path) .venv/bin/python -m bench.floor

Same set-up as `bench/operator.py` (a fresh dev cluster with the audit log, the
emulator with `step_seconds: 0`, the controller as a ServiceAccount with the operator's
RBAC, N resources applied at once by 16 client threads), but the resources are
converged by `bench/floor_controller.py`: a process that makes only the Kubernetes
writes no correct operator can skip (finalizer, id, Ready) and the operator's three
control-plane calls, with no Kopf, no crash-safety marker and no Events. Its converge
time is the least any operator on the Kubernetes API needs on this machine with this
stack. Prints `FLOOR` lines, not BENCH lines (the floor is evidence about a target,
not a figure of deployplane); `make bench` divides the operator's `converge_1000_s` by
this one's into `operator_floor_ratio`.
"""

from __future__ import annotations

import datetime as dt
import os
import signal
import subprocess
import sys
import time

from tests.support.operator_harness import operator_env

from bench.audit_counts import writes_per_cr
from bench.operator import PLURAL, Bench, _exit_on_sigterm, _workdir, parse_args, vm_rss_mb


class FloorBench(Bench):
    def floor(self) -> None:
        env = operator_env(self.emulator, self.kubeconfig, **self.profiles.env("floor"))
        log_path = self.workdir / "floor-controller.log"
        argv = [
            sys.executable,
            "-m",
            "bench.floor_controller",
            "--namespace",
            self.namespace,
            "--poll-interval",
            str(self.args.poll_interval),
            "--poll-max",
            str(self.args.poll_max),
        ]
        since = dt.datetime.now(dt.UTC)
        with log_path.open("ab") as out:
            proc = subprocess.Popen(argv, env={**os.environ, **env}, stdout=out, stderr=out)
        self.stack.callback(proc.kill)
        self.pid = proc.pid
        self.wait_operator_listening(since)
        time.sleep(1.0)  # let its start-up work finish before the clock starts
        converge_s, _, _, writes = self.timed_apply("floor", "floor")
        rss = vm_rss_mb(self.pid)
        self.profiles.memory(self.pid, "floor")
        # The same name as the operator's BENCH line: `make bench` pairs the two.
        print(f"FLOOR converge_1000_s {converge_s:.1f} s", flush=True)
        per_cr = writes_per_cr(writes, PLURAL, self.n)
        print(f"FLOOR k8s_writes_per_cr {per_cr:.2f} writes", flush=True)
        print(f"FLOOR rss_mb_1000 {rss:.1f} MB", flush=True)
        print(f"FLOOR cpu_s_1000 {self.controller_cpu_s:.2f} s", flush=True)

    def run_floor(self) -> None:
        with self.stack:
            self.start()
            self.floor()


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    signal.signal(signal.SIGTERM, _exit_on_sigterm)
    with _workdir(args.workdir) as workdir:
        FloorBench(args, workdir).run_floor()
    return 0


if __name__ == "__main__":
    sys.exit(main())
