"""`deployplane controlplane serve` as scripts run it: a real process on 127.0.0.1, its
port chosen by the system, stopped when the test is done with it. Shared by the tests
of the command itself (test_controlplane_cli) and of the CLI against it
(test_cli_emulator, test_cli_completion)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

LISTENING = "deployplane control plane listening on http://127.0.0.1:"


def inherited_env() -> dict[str, str]:
    """This process's environment, less a database URL the tests did not choose."""
    return {k: v for k, v in os.environ.items() if k != "DEPLOYPLANE_DATABASE_URL"}


@contextmanager
def serve(
    *args: str, cwd: Path, env: dict[str, str] | None = None, output: list[str] | None = None
) -> Iterator[tuple[list[str], str]]:
    """Starts the server; yields the stdout lines up to the listening one, and its URL.

    `output`, when given, receives everything else the process wrote, once it is stopped.
    """
    process = subprocess.Popen(
        [sys.executable, "-m", "deployplane.cli", "controlplane", "serve", "--port", "0", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=cwd,
        env={**inherited_env(), **(env or {})},
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
        stdout, stderr = process.communicate(timeout=20)
        if output is not None:
            output += [stdout, stderr]
