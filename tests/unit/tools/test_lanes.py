"""tools/lanes.sh runs `make test`'s last tiers in lanes side by side. Each test runs a
copy of it beside a Makefile of its own whose targets stand in for the tiers: they print,
sleep, fail or start a process that must not outlive an interrupt."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
LANES_SH = ROOT / "tools" / "lanes.sh"

MAKEFILE = """\
slow-a:
\t@echo a-begins; sleep 1; echo a-ends
fast-b:
\t@echo b-begins; echo b-ends
after-a:
\t@echo after-a-ran
fails:
\t@echo it-fails; exit 3
never:
\t@echo never-ran
waits:
\t@sleep 300 & echo $$! > $(PIDFILE); wait
"""


def project(tmp_path: Path) -> Path:
    (tmp_path / "tools").mkdir()
    script = tmp_path / "tools" / "lanes.sh"
    script.write_text(LANES_SH.read_text())
    script.chmod(0o755)
    (tmp_path / "Makefile").write_text(MAKEFILE)
    return script


def run(script: Path, *lanes: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", str(script), *lanes],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "TMPDIR": str(script.parents[1])},
    )


def test_lanes_run_side_by_side_and_print_each_log_whole_in_the_order_given(
    tmp_path: Path,
) -> None:
    result = run(project(tmp_path), "slow-a+after-a", "fast-b")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    # fast-b ended while slow-a still slept: the lanes overlapped.
    assert out.index("== lane fast-b: passed") < out.index("== lane slow-a+after-a: passed")
    logs = out[out.index("== lane slow-a+after-a: its output") :]
    assert logs.split() == [
        "==", "lane", "slow-a+after-a:", "its", "output",
        "a-begins", "a-ends", "after-a-ran",
        "==", "lane", "fast-b:", "its", "output",
        "b-begins", "b-ends",
    ]  # fmt: skip


def test_a_failed_lane_fails_the_run_names_it_and_stops_its_own_sequence_only(
    tmp_path: Path,
) -> None:
    result = run(project(tmp_path), "fails+never", "fast-b")
    assert result.returncode == 1
    assert "== lane fails+never: failed (exit 2)" in result.stdout
    assert "== lane fast-b: passed" in result.stdout
    assert "it-fails" in result.stdout
    assert "never-ran" not in result.stdout
    assert result.stderr.strip().splitlines()[-1] == "== lanes failed: fails+never"


def test_an_interrupt_ends_every_process_of_every_lane(tmp_path: Path) -> None:
    script = project(tmp_path)
    pidfile = tmp_path / "sleeper.pid"
    lanes = subprocess.Popen(
        ["bash", str(script), "waits", "fast-b"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ, "PIDFILE": str(pidfile), "TMPDIR": str(tmp_path)},
    )
    sleeper = 0
    try:
        deadline = time.monotonic() + 30
        while not (pidfile.exists() and pidfile.read_text().strip()):
            assert time.monotonic() < deadline, "the lane never started"
            time.sleep(0.05)
        sleeper = int(pidfile.read_text())
        lanes.send_signal(signal.SIGTERM)
        assert lanes.wait(timeout=30) == 130
        deadline = time.monotonic() + 10
        while sleeper_alive(sleeper):
            assert time.monotonic() < deadline, "a lane's process outlived the interrupt"
            time.sleep(0.05)
    finally:
        if lanes.poll() is None:
            lanes.kill()
        if sleeper and sleeper_alive(sleeper):
            os.kill(sleeper, signal.SIGKILL)
    assert not any(tmp_path.glob("deployplane-lanes.*")), "the lanes' logs were left behind"


def sleeper_alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.split(")")[-1].split()[0] != "Z"


@pytest.mark.parametrize("lanes", [("fast-b",), ("fast-b", "slow-a")])
def test_the_logs_folder_is_removed_after_a_run(tmp_path: Path, lanes: tuple[str, ...]) -> None:
    assert run(project(tmp_path), *lanes).returncode == 0
    assert not any(tmp_path.glob("deployplane-lanes.*"))


def test_a_long_lane_is_named_while_it_runs(tmp_path: Path) -> None:
    script = project(tmp_path)
    result = subprocess.run(
        ["bash", str(script), "slow-a+slow-a", "fast-b"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "HEARTBEAT": "1", "TMPDIR": str(tmp_path)},
    )
    assert result.returncode == 0, result.stderr
    beats = [line for line in result.stdout.splitlines() if "still running" in line]
    assert beats, result.stdout
    assert all(line.endswith(": slow-a+slow-a") for line in beats), result.stdout
