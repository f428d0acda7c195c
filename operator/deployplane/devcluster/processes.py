"""Starting and stopping the cluster's server processes without leaving strays.

Every server runs in its own session (so its process group id is its pid): stopping it
signals the whole group, catching anything it may have forked. Processes owned by a
Python process (tests) also get `PR_SET_PDEATHSIG`, so the kernel kills them if that
Python process dies without running any cleanup (SIGKILL, an OOM kill). Detached
processes (`deployplane dev cluster up`) skip that: they must outlive the CLI.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

_PR_SET_PDEATHSIG = 1
DEFAULT_GRACE = 5.0


@dataclass
class ServerProcess:
    """One running server: enough to find it again from a state file and stop it."""

    name: str
    pid: int
    executable: str
    log: Path
    popen: subprocess.Popen[bytes] | None = None

    def alive(self) -> bool:
        if self.popen is not None:
            return self.popen.poll() is None
        return pid_runs(self.pid, self.executable)


def _die_with(parent_pid: int) -> Callable[[], None]:
    def preexec() -> None:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
        # The parent may have died between fork and prctl: then nobody would kill us.
        if os.getppid() != parent_pid:
            os._exit(1)

    return preexec


def _join(cgroup_procs: Sequence[Path]) -> Callable[[], None]:
    def preexec() -> None:
        for procs in cgroup_procs:
            procs.write_text(str(os.getpid()))

    return preexec


def _preexec(detached: bool, cgroup_procs: Sequence[Path]) -> Callable[[], None] | None:
    steps = [] if detached else [_die_with(os.getpid())]
    if cgroup_procs:
        steps.append(_join(cgroup_procs))
    if not steps:
        return None

    def preexec() -> None:
        for step in steps:
            step()

    return preexec


def spawn(
    name: str,
    argv: Sequence[str],
    log: Path,
    *,
    detached: bool,
    env: dict[str, str] | None = None,
    cgroup_procs: Sequence[Path] = (),
    executable: str | None = None,
) -> ServerProcess:
    """Start `argv` in a new session with stdout and stderr appended to `log`.

    `cgroup_procs`: `cgroup.procs` files the process joins before it runs `argv`.
    `executable`: what the process runs in the end when `argv[0]` execs it (`nsenter`).
    """
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("ab") as out:
        popen = subprocess.Popen(
            list(argv),
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=_preexec(detached, cgroup_procs),
            env=env,
            close_fds=True,
        )
    return ServerProcess(
        name=name, pid=popen.pid, executable=executable or str(argv[0]), log=log, popen=popen
    )


def pid_runs(pid: int, executable: str) -> bool:
    """True when `pid` is a live (not zombie) process running `executable`.

    The executable check guards against pid reuse: a state file can outlive its
    processes (a reboot), and we must never signal an unrelated process.
    """
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            # The state letter follows the parenthesised command name.
            state = f.read().rsplit(b")", 1)[1].split()[0]
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            argv0 = f.read().split(b"\0", 1)[0].decode(errors="replace")
    except (OSError, IndexError):
        return False
    # A server may rewrite its title over its arguments (redis-server shows
    # "<path> <addr>:<port>"): its path still comes first.
    return state not in (b"Z", b"X") and executable in (argv0, argv0.split(" ", 1)[0])


def _signal_group(proc: ServerProcess, sig: signal.Signals) -> None:
    if not proc.alive():
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, sig)


def _wait(procs: Sequence[ServerProcess], deadline: float) -> list[ServerProcess]:
    remaining = list(procs)
    while remaining and time.monotonic() < deadline:
        remaining = [p for p in remaining if p.alive()]
        if remaining:
            time.sleep(0.02)
    return [p for p in remaining if p.alive()]


def stop(procs: Sequence[ServerProcess], grace: float = DEFAULT_GRACE) -> None:
    """SIGTERM each process group, SIGKILL whatever is left after `grace` seconds."""
    for proc in procs:
        _signal_group(proc, signal.SIGTERM)
    for proc in _wait(procs, time.monotonic() + grace):
        _signal_group(proc, signal.SIGKILL)
    _wait(procs, time.monotonic() + grace)
    for proc in procs:
        if proc.popen is not None:
            # Reap, so no zombie is left behind.
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.popen.wait(timeout=grace)


def log_tail(path: Path, lines: int = 25) -> str:
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return ""
    return "\n".join(text.splitlines()[-lines:])
