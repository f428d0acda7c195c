"""The in-memory agent server's saved state: how long a restart takes to answer with
1,000 threads stored, and how big their files are (the claim's size after them).

    .venv/bin/python -m bench.threads [--threads 1000] [--workers 8]

The server is the agent base's (tools/images: `langgraph-api` 0.16.7 with
`langgraph-runtime-inmem` 0.36.7, its entry script `agent-server.py` and environment),
run as a local process in a venv made from the same pinned wheels (downloaded once into
the image build's wheel cache, then offline), its data directory a temporary one: what
the data plane mounts the claim on. Pod scheduling and probes are not in these figures
(the real-node tier prints those: tests/e2e/test_realnode_langgraph.py).

1. A server on the data directory (`--data`, else a temporary one), and there
   `--threads` threads, each created and run once (`runs.wait`, a graph that appends
   a `Note` to the state) with one store item, through langgraph-sdk from `--workers`
   client threads (skipped when `--data` already holds them).
2. SIGTERM -> exit (the drain and the final write of the files: `threads_stop_s`), and
   the files' size (`threads_claim_mb`).
3. `--starts` times, alternating: an empty server, spawn -> first `/ok`; the server on
   those files, spawn -> first `/ok`, -> first answer of `threads.get_state` for a
   stored thread with its values as they were (`threads_first_answer_s`, the median),
   and a count that finds every thread. `threads_load_s`: the medians' difference of
   the two `/ok` times, what loading the files costs.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import importlib.util
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import ModuleType
from typing import Any

import httpx
from langgraph_sdk import get_sync_client

from bench.report import Figure

ROOT = Path(__file__).resolve().parents[1]
IMAGES = ROOT / "tools" / "images"
GRAPH = """\
from typing import TypedDict

from langgraph.graph import END, START, StateGraph
from notes import Note


class State(TypedDict, total=False):
    text: str
    count: int
    notes: list[Note]


def remember(state: State) -> dict:
    notes = [*state.get("notes", []), Note(state["text"])]
    return {"count": state.get("count", 0) + 1, "notes": notes}


builder = StateGraph(State)
builder.add_node("remember", remember)
builder.add_edge(START, "remember")
builder.add_edge("remember", END)
graph = builder.compile()
"""
NOTE = "from dataclasses import dataclass\n\n\n@dataclass\nclass Note:\n    text: str\n"
# Goals: a restart answers within 20 s (the server's own imports take most of it: 5-12 s
# on this 2-core machine for an empty one), loading the files adds at most 3 s, the
# files of 1,000 small threads fit the claim's default 1 Gi many times over, and the
# stop with its final write fits the grace period's share for it.
FIRST_ANSWER_GOAL_S = 20.0
LOAD_GOAL_S = 3.0
CLAIM_GOAL_MB = 100.0
STOP_GOAL_S = 12.0  # render/state.py FLUSH_SECONDS: the grace period's share for it


def _module(name: str, path: Path) -> ModuleType:
    """A module of tools/images (a directory of scripts, not a package)."""
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # before running it: its dataclasses look themselves up
    spec.loader.exec_module(module)
    return module


def server_python() -> Path:
    """A venv with the agent base's pinned wheels (built once, cached by their list)."""
    build = _module("images_build", IMAGES / "build.py")
    requirements = IMAGES / "agent-base.txt"
    digest = hashlib.sha256(requirements.read_bytes()).hexdigest()[:16]
    venv = build.CACHE / "bench" / f"agent-server-{digest}"
    python = venv / "bin" / "python"
    if python.exists():
        return python
    wheels = build.WORK / "wheels" / f"agent-base-{digest}"
    build.host_wheels(requirements, wheels)  # the same wheels `make images` installs
    part = venv.with_name(venv.name + ".part")
    subprocess.run([sys.executable, "-m", "venv", "--clear", str(part)], check=True)
    pip = [str(part / "bin" / "python"), "-m", "pip", "install", "--quiet", "--no-index"]
    subprocess.run([*pip, "--no-deps", "--find-links", str(wheels), "-r", str(requirements)],
                   check=True)  # fmt: skip
    os.replace(part, venv)
    return python


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Server:
    """The agent server as the image runs it, on `data` (its working directory)."""

    def __init__(self, python: Path, project: Path, data: Path, log: Path) -> None:
        self.python, self.project, self.data, self.log = python, project, data, log
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> float:
        """Spawns it; returns the spawn's monotonic time."""
        recipes = _module("images_recipes", IMAGES / "recipes.py")
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            **recipes.AGENT_BASE_ENV,
            "HOST": "127.0.0.1",
            "PORT": str(self.port),
            "LANGGRAPH_DATA_DIR": str(self.data),
            "LANGSERVE_GRAPHS": json.dumps({"agent": f"{self.project}/agent.py:graph"}),
            "PYTHONPATH": str(self.project),  # the image: a .pth file
        }
        started = time.monotonic()
        with self.log.open("ab") as out:
            self.process = subprocess.Popen(
                [str(self.python), str(IMAGES / "agent-server.py")],
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        return started

    def stop(self) -> float:
        """SIGTERM, as the kubelet sends it; the seconds until the process exited."""
        assert self.process is not None
        started = time.monotonic()
        self.process.send_signal(signal.SIGTERM)
        self.process.wait(timeout=120)
        return time.monotonic() - started

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait()


def until(what: str, probe: Callable[[], Any], timeout: float = 300.0) -> float:
    """Polls `probe` until it returns a true value; the monotonic time it did."""
    deadline = time.monotonic() + timeout
    while True:
        with contextlib.suppress(httpx.HTTPError):
            if probe():
                return time.monotonic()
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what}: not within {timeout:.0f} s")
        time.sleep(0.02)


def timed_start(
    server: Server, thread: str | None = None, expected: Any = None
) -> tuple[float, float]:
    """Starts `server`: seconds from its spawn to its first `/ok`, and to the first answer
    of `thread`'s state equal to `expected` (the same without a thread, which then
    stops the server)."""
    sdk = get_sync_client(url=server.url, api_key=None)
    spawned = server.start()
    answered = served = until("/ok", lambda: ok(server.url)) - spawned
    if thread is None:
        server.stop()
    else:
        answered = (
            until("the stored thread", lambda: sdk.threads.get_state(thread)["values"] == expected)
            - spawned
        )
    return served, answered


def ok(url: str) -> bool:
    return httpx.get(f"{url}/ok", timeout=2).status_code == 200


def seed(url: str, count: int, workers: int) -> list[str]:
    """`count` threads, each run once, and a store item each."""

    def one(n: int) -> str:
        sdk = get_sync_client(url=url, api_key=None)
        thread = sdk.threads.create(metadata={"bench": "threads", "n": n})["thread_id"]
        sdk.runs.wait(thread, "agent", input={"text": f"note {n}"})
        sdk.store.put_item(["bench", "threads"], str(n), {"thread": thread})
        return str(thread)

    with ThreadPoolExecutor(workers) as pool:
        return list(pool.map(one, range(count)))


def stored(url: str, count: int) -> list[str]:
    """The threads an earlier run left (`--data`), oldest first."""
    sdk = get_sync_client(url=url, api_key=None)
    found = sdk.threads.search(
        metadata={"bench": "threads"},
        limit=min(count, 1000),
        sort_by="created_at",
        sort_order="asc",
    )
    return [str(t["thread_id"]) for t in found]


def size_mb(directory: Path) -> tuple[float, dict[str, int]]:
    files = {f.name: f.stat().st_size for f in sorted(directory.iterdir()) if f.is_file()}
    return sum(files.values()) / 1e6, files


@contextlib.contextmanager
def workdir() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="bench-threads-") as name:
        yield Path(name)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=1000)
    parser.add_argument("--workers", type=int, default=8)
    parser.add_argument("--starts", type=int, default=3, help="restarts measured (median)")
    parser.add_argument(
        "--data",
        type=Path,
        help="the server's data directory, kept (default: a temporary one); when it holds "
        "the files of an earlier run with as many threads, the threads are not made again",
    )
    args = parser.parse_args()
    python = server_python()
    with workdir() as work:
        project, data = work / "project", args.data or work / "data"
        project.mkdir()
        (project / "agent.py").write_text(GRAPH)
        (project / "notes.py").write_text(NOTE)
        log = work / "server.log"
        server = Server(python, project, data, log)
        try:
            server.start()
            until("/ok", lambda: ok(server.url))
            threads = stored(server.url, args.threads)
            if len(threads) != args.threads:
                started = time.monotonic()
                threads = seed(server.url, args.threads, args.workers)
                print(f"{len(threads)} threads run once each: {time.monotonic() - started:.1f} s")
            probe = get_sync_client(url=server.url, api_key=None)
            expected = probe.threads.get_state(threads[-1])["values"]
            stopped = server.stop()
            claim_mb, files = size_mb(data / ".langgraph_api")
            print(f"SIGTERM -> exit {stopped:.2f} s; the files: {claim_mb:.1f} MB {files}")
            # An empty server's start and the restart on the files, alternating: the
            # machine's load moves a start by a second or two either way.
            empty_oks, again_oks, answers = [], [], []
            for start in range(args.starts):
                empty = Server(python, project, work / f"empty-{start}", log)
                empty_oks.append(timed_start(empty)[0])
                server = Server(python, project, data, log)
                again_ok, answer = timed_start(server, threads[-1], expected)
                count = get_sync_client(url=server.url, api_key=None).threads.count(
                    metadata={"bench": "threads"}
                )
                assert count == args.threads, f"{count} of {args.threads} threads loaded"
                server.stop()
                again_oks.append(again_ok)
                answers.append(answer)
                print(
                    f"start {start + 1}: empty spawn -> /ok {empty_oks[-1]:.2f} s; on the files "
                    f"spawn -> /ok {again_ok:.2f} s, -> get_state {answer:.2f} s",
                    flush=True,
                )
        except BaseException:
            if log.exists():
                print(log.read_text(errors="replace")[-3000:], file=sys.stderr)
            raise
        finally:
            server.kill()
    first_answer = statistics.median(answers)
    load = statistics.median(again_oks) - statistics.median(empty_oks)
    n = args.threads
    figures = [
        Figure(f"threads_first_answer_s_{n}", first_answer, "s", "<=", FIRST_ANSWER_GOAL_S, 2),
        Figure(f"threads_load_s_{n}", load, "s", "<=", LOAD_GOAL_S, 2),
        Figure(f"threads_claim_mb_{n}", claim_mb, "MB", "<=", CLAIM_GOAL_MB),
        Figure(f"threads_stop_s_{n}", stopped, "s", "<=", STOP_GOAL_S, 2),
    ]
    for figure in figures:
        print(figure.line(), flush=True)
    return 0 if all(f.met for f in figures) else 1


if __name__ == "__main__":
    sys.exit(main())
