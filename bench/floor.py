"""How close to 2 can `converge_ratio` get at all? The same measure, for the floor.

    DEPLOYPLANE_TOOLS_BIN=$(bash tools/k8s/build.sh path) .venv/bin/python -m bench.floor

Same set-up and yardstick as `bench/operator.py` (a fresh dev cluster with the audit log,
the emulator with `step_seconds: 0`, `bench/direct.py`), but the resources are converged
by `bench/floor_controller.py` instead of the operator: a process that makes only the
Kubernetes writes no correct operator can skip (finalizer, id, Ready) and the operator's
three control-plane calls, with no Kopf, no crash-safety marker and no Events. Its
converge time over the direct script's is the lowest ratio any operator on the
Kubernetes API reaches on this machine. Prints `FLOOR` lines, not BENCH lines: the floor
is evidence about the target, not a figure of deployplane.
"""

from __future__ import annotations

import datetime as dt
import os
import subprocess
import sys
import time

from tests.e2e.operator_harness import operator_env

from bench.operator import Bench, _workdir, parse_args


class FloorBench(Bench):
    def floor(self, direct_s: float) -> None:
        env = operator_env(self.emulator, self.cluster.kubeconfig)
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
        converge_s, _, _ = self.timed_apply("floor", "floor-controller")
        print(f"FLOOR converge_{self.n}_s {converge_s:.1f} s", flush=True)
        print(f"FLOOR direct_{self.n}_s {direct_s:.1f} s", flush=True)
        print(f"FLOOR converge_ratio {converge_s / direct_s:.2f} x (goal <= 2)", flush=True)

    def run_floor(self) -> None:
        with self.stack:
            self.start()
            direct_s = self.direct()
            self.floor(direct_s)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    with _workdir(args.workdir) as workdir:
        FloorBench(args, workdir).run_floor()
    return 0


if __name__ == "__main__":
    sys.exit(main())
