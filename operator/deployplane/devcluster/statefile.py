"""A cluster's `state.json` and the files it owns in its state directory.

Detached clusters (`deployplane dev cluster up`) outlive the process that started
them; `state.json` is how `DevCluster.attach()` finds their servers again.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from deployplane.devcluster.processes import ServerProcess

STATE_FILE = "state.json"
# Everything a cluster writes into its state directory; `down` removes exactly these,
# so pointing --state-dir at a directory with other content never deletes that content.
OWNED_ENTRIES = (
    "pki",
    "etcd-data",
    "logs",
    "admin.kubeconfig",
    "controller-manager.kubeconfig",
    "scheduler.kubeconfig",
    "kwok.kubeconfig",
    "kwok",
    "node",
    "audit-policy.yaml",
    "audit.log",
    "gitops",
    "gitops.json",
    "git",
    STATE_FILE,
)


def write_state(state_dir: Path, fields: dict[str, Any], procs: Sequence[ServerProcess]) -> None:
    """`fields` (the cluster's settings and paths) plus the start time and the servers."""
    state = {
        **fields,
        "started_at": dt.datetime.now(dt.UTC).isoformat(),
        "processes": [
            {"name": p.name, "pid": p.pid, "executable": p.executable, "log": str(p.log)}
            for p in procs
        ],
    }
    (state_dir / STATE_FILE).write_text(json.dumps(state, indent=2) + "\n")


def read_state(state_dir: Path) -> dict[str, Any] | None:
    """The state a cluster wrote, or None when there is none (or it is unreadable)."""
    try:
        state = json.loads((state_dir / STATE_FILE).read_text())
    except (OSError, ValueError):
        return None
    return state if isinstance(state, dict) else None


def recorded_processes(state: dict[str, Any]) -> list[ServerProcess]:
    return [
        ServerProcess(
            name=str(p["name"]),
            pid=int(p["pid"]),
            executable=str(p["executable"]),
            log=Path(p["log"]),
        )
        for p in state.get("processes", [])
    ]


def remove_owned(state_dir: Path) -> None:
    """Remove what a cluster put in `state_dir`, then the directory if now empty."""
    for entry in OWNED_ENTRIES:
        path = state_dir / entry
        if path.is_dir():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink(missing_ok=True)
    with contextlib.suppress(OSError):
        state_dir.rmdir()  # only if now empty
