"""The processes of a remote build: run with a scrubbed environment, their output
streamed line by line into the build
log (with a URL's credentials masked, as pip masks them)."""

from __future__ import annotations

import re
import subprocess
from collections import deque
from collections.abc import Callable, Sequence
from pathlib import Path

__all__ = ["Emit", "ProcessFailed", "run_streamed", "scrubbed_env", "shown"]

Emit = Callable[[str, str], None]  # (level, message) into the build log
_MAX_LINE = 2000
_URL_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/\s@]+@")


class ProcessFailed(Exception):
    """A step's process failed; `tail` holds its last output lines."""

    def __init__(self, tail: list[str]) -> None:
        super().__init__(tail[-1] if tail else "no output")
        self.tail = tail


def shown(line: str) -> str:
    """A line as the build log shows it: credentials in URLs masked, length capped."""
    return _URL_USERINFO.sub(r"\1***@", line.rstrip())[:_MAX_LINE]


def scrubbed_env(home: Path) -> dict[str, str]:
    """The whole environment of a build's process: no variable of the emulator's (no
    API key, database URL or cloud credential), a HOME of the build's own."""
    return {
        "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
        "HOME": str(home),
        "LANG": "C.UTF-8",
        "TMPDIR": str(home),
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
        "PIP_NO_INPUT": "1",
        "PIP_PROGRESS_BAR": "off",
    }


def run_streamed(
    cmd: Sequence[str],
    emit: Emit | None,
    *,
    env: dict[str, str],
    cwd: Path | None = None,
) -> list[str]:
    """Runs `cmd`, each output line (stdout and stderr) emitted as INFO; returns the
    last lines. Raises `ProcessFailed` on a non-zero exit status."""
    tail: deque[str] = deque(maxlen=20)
    with subprocess.Popen(
        list(cmd),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        env=env,
        cwd=cwd,
        text=True,
        errors="replace",
    ) as proc:
        assert proc.stdout is not None
        for raw in proc.stdout:
            line = shown(raw)
            if line:
                tail.append(line)
                if emit is not None:
                    emit("INFO", line)
        code = proc.wait()
    if code != 0:
        raise ProcessFailed(list(tail))
    return list(tail)
