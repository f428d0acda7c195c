"""The two small Go checkers the tests use, built by `make tools` (tools/k8s/build.sh):

- `kstatus`: Flux's kstatus library (github.com/fluxcd/cli-utils/pkg/kstatus/status)
  judging one object, as Flux's health checks do;
- `promql`: Prometheus's PromQL parser, giving each expression's metric names or its
  parse error.

They live next to the Kubernetes binaries: DEPLOYPLANE_TOOLS_BIN, else the build
script's bin dir, else PATH.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any, NamedTuple

ROOT = Path(__file__).resolve().parents[2]
BUILD_SCRIPT = ROOT / "tools" / "k8s" / "build.sh"


class CheckerNotFound(RuntimeError):
    """A checker binary is not built."""


def checker_binary(name: str) -> Path:
    candidates: list[Path] = []
    if os.environ.get("DEPLOYPLANE_TOOLS_BIN"):
        candidates.append(Path(os.environ["DEPLOYPLANE_TOOLS_BIN"]) / name)
    out = subprocess.run(
        ["bash", str(BUILD_SCRIPT), "path"], capture_output=True, text=True, timeout=10
    )
    if out.returncode == 0 and out.stdout.strip():
        candidates.append(Path(out.stdout.strip()) / name)
    on_path = shutil.which(name)
    if on_path:
        candidates.append(Path(on_path))
    for path in candidates:
        if os.access(path, os.X_OK):
            return path
    raise CheckerNotFound(f"no {name} checker: build it with `bash tools/k8s/build.sh {name}`")


class KStatus(NamedTuple):
    status: str  # InProgress, Current, Failed, Terminating, NotFound, Unknown
    message: str


def kstatus(obj: dict[str, Any]) -> KStatus:
    """What Flux's kstatus computes for the live object `obj`."""
    out = subprocess.run(
        [str(checker_binary("kstatus"))],
        input=json.dumps(obj),
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    verdict = json.loads(out.stdout)
    return KStatus(verdict["status"], verdict["message"])


class PromQL(NamedTuple):
    expr: str
    metrics: list[str]
    error: str


def promql(exprs: list[str]) -> list[PromQL]:
    """Each expression parsed by Prometheus: the metric names it selects, or its error."""
    out = subprocess.run(
        [str(checker_binary("promql"))],
        input=json.dumps(exprs),
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    return [PromQL(r["expr"], r["metrics"], r.get("error", "")) for r in json.loads(out.stdout)]
