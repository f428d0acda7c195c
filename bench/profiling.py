"""Opt-in profiles of the controller a benchmark starts: `BENCH_PROFILE=dir`.

Off by default (a sampling profiler costs the machine some CPU). When on, for the
operator and for the floor controller alike:

- `<tag>-cpu.txt`: a py-spy profile (`--format raw`: collapsed stacks, one line per
  stack with its sample count; load it into speedscope or flamegraph.pl, or summarise
  it with `python -m bench.profiling <file>`) of the converge phase, from the first
  apply until every resource is Ready. `--nonblocking`: the process is not paused to
  be sampled, so its timing is the unprofiled one within a few percent;
- `apiserver-cpu.pprof`: the kube-apiserver's CPU profile over the first 30 s of the
  converge (`go tool pprof -top`);
- `<tag>-memory.txt`: what `bench/profile_hook/sitecustomize.py` writes on SIGUSR1
  once every resource is Ready: live objects by type, asyncio tasks by coroutine, and
  with `BENCH_TRACEMALLOC=<frames>` the top allocation sites (slow: not with a CPU
  profile you mean to read).
"""

from __future__ import annotations

import collections
import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

HOOK = Path(__file__).resolve().parent / "profile_hook"


class Profiles:
    def __init__(self, directory: Path | None) -> None:
        self.directory = directory
        if directory is not None:
            directory.mkdir(parents=True, exist_ok=True)

    @classmethod
    def from_environment(cls) -> Profiles:
        value = os.environ.get("BENCH_PROFILE")
        return cls(Path(value).resolve() if value else None)

    def env(self, tag: str) -> dict[str, str]:
        """Environment for the controller process: the memory hook, when profiling."""
        if self.directory is None:
            return {}
        path = os.pathsep.join(p for p in (str(HOOK), os.environ.get("PYTHONPATH")) if p)
        return {"PYTHONPATH": path, "BENCH_PROFILE_MEMORY_OUT": str(self.memory_path(tag))}

    def memory_path(self, tag: str) -> Path:
        assert self.directory is not None
        return self.directory / f"{tag}-memory.txt"

    @contextlib.contextmanager
    def cpu(self, pid: int, tag: str) -> Iterator[None]:
        """py-spy samples `pid` while the block runs."""
        if self.directory is None:
            yield
            return
        out = self.directory / f"{tag}-cpu.txt"
        spy = Path(sys.executable).with_name("py-spy")
        argv = [str(spy), "record", "--pid", str(pid), "--format", "raw", "-o", str(out)]
        argv += ["--rate", "100", "--nonblocking"]
        with (self.directory / f"{tag}-py-spy.log").open("ab") as log:
            process = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT)
        try:
            yield
        finally:
            process.send_signal(signal.SIGINT)  # py-spy writes its output on SIGINT
            process.wait(60)

    @contextlib.contextmanager
    def apiserver(self, api: Any, seconds: int = 30) -> Iterator[None]:
        """The kube-apiserver's own CPU profile (Go pprof) over the first `seconds` of the
        block, through an admin `ApiClient`; read it with `go tool pprof -top <file>`.
        Needs `DEPLOYPLANE_APISERVER_PROFILING=1` when the cluster starts
        (`enable_apiserver_profiling`)."""
        if self.directory is None:
            yield
            return
        out = self.directory / "apiserver-cpu.pprof"

        def fetch() -> None:
            method, url, headers, body, _ = api.param_serialize(
                "GET", "/debug/pprof/profile", query_params=[("seconds", seconds)]
            )
            response = api.call_api(method, url, headers, body, _request_timeout=seconds + 30)
            response.read()
            out.write_bytes(response.data)

        thread = threading.Thread(target=fetch, daemon=True)
        thread.start()
        try:
            yield
        finally:
            thread.join(seconds + 40)

    def enable_apiserver_profiling(self) -> None:
        """Ask the dev cluster started next for /debug/pprof (`devcluster/cluster.py`)."""
        if self.directory is not None:
            os.environ["DEPLOYPLANE_APISERVER_PROFILING"] = "1"

    def converge_starts(self, pid: int) -> None:
        """Tell the hook in `pid` the converge starts: it clears its pause table, and with
        `BENCH_GC_FREEZE=1` calls `gc.freeze()` (a what-if for the operator's start-up)."""
        if self.directory is not None:
            os.kill(pid, signal.SIGUSR2)

    def memory(self, pid: int, tag: str, within: float = 120.0) -> None:
        """Ask the hook in `pid` for its memory report and wait until it is written."""
        if self.directory is None:
            return
        path = self.memory_path(tag)
        path.unlink(missing_ok=True)
        os.kill(pid, signal.SIGUSR1)
        deadline = time.monotonic() + within
        while not path.exists() and time.monotonic() < deadline:
            time.sleep(0.2)


def package(frame: str) -> str:
    """The top-level package (or stdlib module) of a py-spy frame `func (path:line)`:
    `kopf`, `httpcore`, `deployplane/reconcile`, `json`, `asyncio`..."""
    path = frame.rpartition(" (")[2].rstrip(")").rpartition(":")[0]
    if path.startswith("<frozen "):
        return path[len("<frozen ") :].rstrip(">").split(".")[0]
    parts = path.split("/")
    if "site-packages" in parts:
        parts = parts[parts.index("site-packages") + 1 :]
    elif "deployplane" in parts:
        parts = parts[parts.index("deployplane") :]
    if parts[0] == "deployplane" and len(parts) > 2:
        return "/".join(parts[:2])  # our layers apart: deployplane/reconcile, /controller...
    return parts[0].removesuffix(".py") or "?"


# Where a sample of the operator goes, first match wins: a needle is matched against the
# whole stack (outermost first), so a control-plane call made inside a reconcile pass
# counts as a control-plane call, not as "the rest of the pass".
BUCKETS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("pass: control-plane calls (httpx)", ("ControlPlaneClient.",)),
    ("pass: status patches (aiohttp)", ("KubernetesApi.patch_status", "patch_status (bench/")),
    ("pass: the rest (reconciler, diff, pydantic, metrics)", ("PassRunner.", "converge (bench/")),
    ("on.event handler", ("changed (deployplane/controller/",)),
    ("Kopf: Events posted", ("kopf/_core/engines/posting.py",)),
    ("Kopf: its own patches (finalizer)", ("kopf/_cogs/clients/patching.py",)),
    ("Kopf: daemon machinery", ("kopf/_core/engines/daemons.py",)),
    ("Kopf: per-event processing", ("kopf/_core/reactor/processing.py",)),
    ("watch streams and queueing", ("watching.py", "queueing.py", "watch_from (bench/")),
    ("aiohttp/ssl callbacks (responses read)", ("aiohttp/", "ssl.py", "asyncio/sslproto.py")),
    ("event loop: waiting in select", ("EpollSelector.select",)),
)


def bucket(stack: str) -> str:
    return next((label for label, needles in BUCKETS if any(n in stack for n in needles)), "other")


def summarise(lines: list[str], top: int = 30) -> str:
    """Self and inclusive samples by function, and by package, from py-spy's raw
    (collapsed) output: `frame;frame;...;frame count` per line, outermost frame first."""
    self_samples: collections.Counter[str] = collections.Counter()
    inclusive: collections.Counter[str] = collections.Counter()
    self_packages: collections.Counter[str] = collections.Counter()
    packages: collections.Counter[str] = collections.Counter()
    buckets: collections.Counter[str] = collections.Counter()
    total = 0
    for line in lines:
        stack, _, count_text = line.rstrip().rpartition(" ")
        if not stack or not count_text.isdigit():
            continue
        count = int(count_text)
        total += count
        frames = stack.split(";")
        buckets[bucket(stack)] += count
        self_samples[frames[-1]] += count
        self_packages[package(frames[-1])] += count
        for frame in set(frames):
            inclusive[frame] += count
        for name in {package(frame) for frame in frames}:
            packages[name] += count
    if total == 0:
        return "no samples"
    out = [f"{total} samples", "", "## where it goes (bench.profiling.BUCKETS)"]
    out += [f"{100 * c / total:5.1f}% {label}" for label, c in buckets.most_common()]
    out += ["", "## self (top)"]
    out += [f"{100 * c / total:5.1f}% {f}" for f, c in self_samples.most_common(top)]
    out += ["", "## inclusive (top)"]
    out += [f"{100 * c / total:5.1f}% {f}" for f, c in inclusive.most_common(top)]
    out += ["", "## by package: self, inclusive (samples with a frame in it)"]
    out += [
        f"{100 * c / total:5.1f}% {100 * packages[p] / total:5.1f}% {p}"
        for p, c in self_packages.most_common(top)
    ]
    return "\n".join(out)


if __name__ == "__main__":
    print(summarise(Path(sys.argv[1]).read_text().splitlines()))
