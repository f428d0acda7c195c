"""The README's main command: `deployplane demo up` (what `make demo` runs) brings every
example to Ready, works twice in a row, and `demo down` leaves no process behind."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from deployplane.devcluster import DevCluster

REPO = Path(__file__).resolve().parents[2]


def _demo(*args: str, state: Path, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "DEPLOYPLANE_DEMO_DIR": str(state)}
    return subprocess.run(
        [sys.executable, "-m", "deployplane.cli", "demo", *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def _processes_using(state: Path) -> list[str]:
    out = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
    return [line for line in out.splitlines() if str(state) in line]


def test_demo_brings_examples_to_ready_twice_and_down_cleans_up(
    tmp_path: Path, dev_cluster: DevCluster
) -> None:
    # dev_cluster only guarantees the binaries exist (skip/fail rules); the demo runs its own.
    state = tmp_path / "demo"
    try:
        for attempt in (1, 2):
            up = _demo("up", "--timeout", "180", state=state)
            assert up.returncode == 0, f"attempt {attempt}: {up.stdout[-3000:]}{up.stderr[-3000:]}"
            status = _demo("status", state=state, timeout=60)
            assert status.returncode == 0, status.stderr
            rows = json.loads(status.stdout)
            assert {r["kind"] for r in rows} == {"Listener", "AgentDeployment"}
            assert len(rows) == 3
            assert all(r["ready"] == "True" for r in rows), rows
            assert all(r["revision"] == "DEPLOYED" for r in rows if r["kind"] == "AgentDeployment")
    finally:
        down = _demo("down", state=state, timeout=120)
    assert down.returncode == 0, down.stderr
    assert _processes_using(state) == []
