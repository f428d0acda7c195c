"""A user's LangGraph app and the vendor's tools, for the e2e tests that deploy it as a
user would (tests/e2e/test_realnode_langgraph.py, tests/e2e/test_demo_realnode.py): a
tiny two-node graph with one pure-Python dependency (`six`, listed in
`langgraph.json`), the vendor's `langgraph` CLI (langgraph-cli 0.4.40) run with the host
and key in its environment, `deployplane deployments port-forward` as a subprocess, and
the graph run through the vendor's SDK (`langgraph-sdk`, `client.runs.wait`)."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from langgraph_sdk import get_sync_client

LANGGRAPH = Path(sys.executable).parent / "langgraph"
FIXED_MTIME = 1_767_225_600  # 2026-01-01T00:00:00Z

AGENT = """\
from typing import TypedDict

import six
from langgraph.graph import END, START, StateGraph


class State(TypedDict):
    text: str
    steps: list[str]


def first(state: State) -> dict:
    return {"text": state["text"].upper(), "steps": [*state.get("steps", []), "first"]}


def second(state: State) -> dict:
    return {"text": six.ensure_str(state["text"] + "SUFFIX"), "steps": [*state["steps"], "NAME"]}


builder = StateGraph(State)
builder.add_node("first", first)
builder.add_node("second", second)
builder.add_edge(START, "first")
builder.add_edge("first", "second")
builder.add_edge("second", END)
graph = builder.compile()
"""


def agent_source(suffix: str = "!", name: str = "second") -> str:
    """The graph's module: it upper-cases the text, appends `suffix`, and lists the
    steps `first` and `name`."""
    return AGENT.replace("SUFFIX", suffix).replace("NAME", name)


def write_project(path: Path, suffix: str, name: str) -> Path:
    """The app in `path`: its graph upper-cases the text, appends `suffix`, and lists the
    steps `first` and `name`."""
    path.mkdir(parents=True, exist_ok=True)
    config = {"graphs": {"agent": "./agent.py:graph"}, "dependencies": [".", "six==1.17.0"]}
    (path / "langgraph.json").write_text(json.dumps(config))
    (path / "agent.py").write_text(agent_source(suffix, name))
    # Fixed times: the CLI's tarball records them and the build's cache key is the
    # tarball's content, so the next run reuses the images it built.
    for item in (path, path / "langgraph.json", path / "agent.py"):
        os.utime(item, (FIXED_MTIME, FIXED_MTIME))
    return path


# A graph that keeps a conversation: each run on a thread adds a `Note` of its text and
# counts the runs. `Note` lives in a module of its own, imported by name (as a state
# class must, for the in-memory server to load its saved threads: docs/dataplane.md).
THREADS_AGENT = """\
from typing import TypedDict

from langgraph.graph import END, START, StateGraph
from MODULE import Note


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
NOTE = """\
from dataclasses import dataclass


@dataclass
class Note:
    text: str
"""


def write_threads_project(path: Path, module: str = "notes") -> Path:
    """The threads app in `path`, its `Note` class in `<module>.py` (and no other)."""
    path.mkdir(parents=True, exist_ok=True)
    for old in path.glob("*.py"):
        old.unlink()
    config = {"graphs": {"agent": "./agent.py:graph"}, "dependencies": ["."]}
    (path / "langgraph.json").write_text(json.dumps(config))
    (path / "agent.py").write_text(THREADS_AGENT.replace("MODULE", module))
    (path / f"{module}.py").write_text(NOTE)
    for item in (path, *path.iterdir()):
        os.utime(item, (FIXED_MTIME, FIXED_MTIME))
    return path


def langgraph(url: str, api_key: str, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The vendor's CLI as a user runs it: the host and key from its environment."""
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("LANGSMITH", "LANGCHAIN"))},
        "LANGGRAPH_HOST_URL": url,
        "LANGGRAPH_HOST_API_KEY": api_key,
        "LANGGRAPH_CLI_NO_ANALYTICS": "1",
    }
    argv = [str(LANGGRAPH), *args]
    return subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=900)


def deploy(
    url: str, api_key: str, project: Path, name: str
) -> tuple[subprocess.CompletedProcess[str], float]:
    """`langgraph deploy --remote` of `project` as `name`: (its result, seconds)."""
    started = time.monotonic()
    done = langgraph(url, api_key, project, "deploy", "--remote", "--no-input", "--name", name)
    return done, time.monotonic() - started


def deployment_id(output: str) -> str:
    """The deployment's id in what `langgraph deploy` printed: `Deployment ID: <id>` when
    it created the deployment, `Found existing deployment (ID: <id>)` when a deployment
    of that name was there (another test of a module sharing one emulator made it)."""
    found = re.search(
        r"(?:Deployment ID: |Found existing deployment \(ID: )([0-9a-f-]{36})", output
    )
    assert found, output
    return found.group(1)


@contextlib.contextmanager
def port_forward(url: str, api_key: str, ref: str, kubeconfig: Path) -> Iterator[str]:
    """`deployplane deployments port-forward REF 0` as a subprocess (stopped at the end
    by its pid, as Ctrl-C would); yields the local URL its line names. Port 0: kubectl
    binds a free port itself, so no other test can take it between choosing and binding."""
    argv = [sys.executable, "-m", "deployplane.cli", "deployments", "port-forward", ref,
            "0", "--url", url, "--kubeconfig", str(kubeconfig)]  # fmt: skip
    process = subprocess.Popen(
        argv,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "DEPLOYPLANE_API_KEY": api_key},
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        found = re.match(r"forwarding (http://127\.0\.0\.1:\d+) -> deployment ", line)
        assert found, line + (
            process.stderr.read() if process.poll() is not None and process.stderr else ""
        )
        yield found.group(1)
    finally:
        process.send_signal(signal.SIGINT)
        code = process.wait(30)
    assert code == 0, process.stderr.read() if process.stderr else ""


def run_graph(url: str, text: str) -> tuple[Any, float]:
    """The graph run through the vendor's SDK, as its docs show: (output, seconds)."""
    sdk = get_sync_client(url=url, api_key=None)
    started = time.monotonic()
    output = sdk.runs.wait(None, "agent", input={"text": text, "steps": []})
    return output, time.monotonic() - started
