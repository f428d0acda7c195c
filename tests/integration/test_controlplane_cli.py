"""`deployplane controlplane serve` as scripts use it: a real process on 127.0.0.1."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import yaml
from _controlplane_harness import KEY_A, config_data

LISTENING = "deployplane control plane listening on http://127.0.0.1:"
KEY_LINE = "deployplane dev API key: "


@contextmanager
def serve(*args: str, cwd: Path) -> Iterator[tuple[list[str], str]]:
    """Starts the server; yields the stdout lines up to the listening one, and its URL."""
    process = subprocess.Popen(
        [sys.executable, "-m", "deployplane.cli", "controlplane", "serve", "--port", "0", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=cwd,
    )
    try:
        assert process.stdout is not None
        lines: list[str] = []
        for line in process.stdout:
            lines.append(line.rstrip("\n"))
            if line.startswith(LISTENING):
                break
        else:
            raise AssertionError(f"exited without listening: {process.wait()}")
        yield lines, lines[-1].removeprefix("deployplane control plane listening on ")
    finally:
        process.terminate()
        process.wait(timeout=20)


def test_dev_mode_prints_its_key_once_and_keeps_state_in_the_default_file(
    tmp_path: Path,
) -> None:
    with serve(cwd=tmp_path) as (lines, url):
        assert len(lines) == 2
        assert lines[0].startswith(KEY_LINE)
        key = lines[0].removeprefix(KEY_LINE)
        assert httpx.get(f"{url}/healthz").status_code == 200
        assert httpx.get(f"{url}/v2/deployments").status_code == 401
        listed = httpx.get(f"{url}/v2/deployments", headers={"X-Api-Key": key})
        assert listed.status_code == 200
    assert (tmp_path / ".deployplane" / "controlplane.db").exists()


def test_fixed_key_and_config_file(tmp_path: Path) -> None:
    with serve("--api-key", "fixed-key", cwd=tmp_path) as (lines, url):
        assert lines == [lines[-1]]  # no key printed when it was given
        ok = httpx.get(f"{url}/v2/deployments", headers={"X-Api-Key": "fixed-key"})
        assert ok.status_code == 200
    config = tmp_path / "emulator.yaml"
    config.write_text(yaml.safe_dump(config_data(step_seconds=0.5)))
    database = f"sqlite+aiosqlite:///{tmp_path / 'other.db'}"
    with serve("--config", str(config), "--database", database, cwd=tmp_path) as (lines, url):
        assert len(lines) == 1
        ok = httpx.get(f"{url}/v2/listeners", headers={"X-Api-Key": KEY_A})
        assert ok.status_code == 200


def test_unknown_config_key_is_an_error_naming_it(tmp_path: Path) -> None:
    config = tmp_path / "emulator.yaml"
    config.write_text(yaml.safe_dump({"pipeline": {"step_second": 1}}))
    result = subprocess.run(
        [sys.executable, "-m", "deployplane.cli", "controlplane", "serve", "--config", str(config)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=60,
    )
    assert result.returncode == 2
    assert "pipeline.step_second: unknown key" in result.stderr
