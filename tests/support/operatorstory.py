"""What the operator's replicas did to a set of resources, for a failed e2e check to
print: the Events they posted about them (each names the pod that posted it, its
`reportingInstance`), in time order, and the logs of the operator's pods, followed
from the start of a test (`kubectl logs -f`), so that the log of a pod the test
deletes is kept too. It only records; the test asserts.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from kubernetes import client


def event_lines(
    core: client.CoreV1Api, namespace: str, kind: str, names: Iterable[str]
) -> list[str]:
    """The Events of the `kind` objects `names`, oldest first: time, object, the pod that
    posted it, type, reason, message."""
    wanted = set(names)
    rows = []
    for event in core.list_namespaced_event(namespace).items:
        involved = event.involved_object
        if involved.kind != kind or involved.name not in wanted:
            continue
        when = event.event_time or event.last_timestamp or event.first_timestamp
        instance = event.reporting_instance or (event.source.host if event.source else "")
        rows.append(
            (
                str(when),
                f"{when} {involved.name} [{instance}] {event.type} {event.reason}: {event.message}",
            )
        )
    return [line for _, line in sorted(rows)]


@contextmanager
def followed_logs(
    kubectl: Path, kubeconfig: Path, namespace: str, pods: Iterable[str], workdir: Path
) -> Iterator[dict[str, Path]]:
    """`kubectl logs -f --timestamps` of each pod into `workdir/<pod>.log`, from now
    until the block ends (a pod deleted meanwhile keeps what it logged until then)."""
    files = {pod: workdir / f"{pod}.log" for pod in pods}
    procs: list[subprocess.Popen[Any]] = []
    try:
        for pod, path in files.items():
            with path.open("wb") as out:
                argv = [str(kubectl), f"--kubeconfig={kubeconfig}", "logs", "-f"]
                argv += ["--timestamps", "-n", namespace, pod]
                procs.append(subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT))
        yield files
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)


def log_lines(files: dict[str, Path], needles: Iterable[str], limit: int = 200) -> list[str]:
    """The lines of the followed logs that name any of `needles`, per pod, at most
    `limit` of each."""
    words = tuple(needles)
    out: list[str] = []
    for pod, path in files.items():
        text = path.read_text(errors="replace") if path.exists() else ""
        hits = [line for line in text.splitlines() if any(w in line for w in words)]
        out.append(f"-- {pod}: {len(text.splitlines())} lines, {len(hits)} naming the burst")
        out += hits[-limit:]
    return out
