"""The apiserver's audit log, used to count the requests an operator makes.

Steady state must write nothing (ARCHITECTURE.md); the audit log is the apiserver's
own record of every request, so counting its events is the honest way to check that.
The policy logs every request at Metadata level (who, verb, resource; no bodies) and
omits the RequestReceived stage, so each request is exactly one ResponseComplete line.
The log backend's default mode is blocking: an event is on disk before the response
is sent, so a count taken right after a call includes that call.
"""

from __future__ import annotations

import datetime as dt
import json
from collections import Counter
from collections.abc import Collection
from pathlib import Path
from typing import Any

POLICY = """\
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
  - level: Metadata
"""
WRITE_VERBS = frozenset({"create", "update", "patch", "delete", "deletecollection"})
_COUNTED_STAGES = frozenset({"ResponseComplete", "Panic"})


def write_policy(path: Path) -> Path:
    path.write_text(POLICY)
    return path


def _aware(when: dt.datetime) -> dt.datetime:
    # A naive datetime is taken as local time, which is what datetime.now() returns.
    return when if when.tzinfo is not None else when.astimezone()


def _events(log: Path) -> list[dict[str, Any]]:
    try:
        text = log.read_text()
    except FileNotFoundError:
        return []
    lines = text.split("\n")
    # The last element is "" after a complete line, or a line still being written.
    return [json.loads(line) for line in lines[:-1] if line]


def count_requests(
    log: Path,
    *,
    verbs: Collection[str] | None = None,
    since: dt.datetime | None = None,
    user: str | None = None,
    namespace: str | None = None,
    dry_run: bool | None = None,
) -> dict[str, int]:
    """Requests per resource (`configmaps`, `agentdeployments/status`) in the audit log.

    Filters: `verbs` (audit verbs: get, list, watch, create, update, patch, delete,
    deletecollection), received at or after `since`, made by `user` (e.g.
    `system:serviceaccount:ns:name`), against objects in `namespace`, server-side
    dry-runs only or none of them (`dry_run`: `dryRun=All` in the request's URI, which
    stores nothing). Failed requests count too: an attempted write is a write for
    steady-state purposes.
    """
    after = _aware(since) if since is not None else None
    counts: Counter[str] = Counter()
    for event in _events(log):
        if event.get("stage") not in _COUNTED_STAGES:
            continue
        if verbs is not None and event.get("verb") not in verbs:
            continue
        if user is not None and event.get("user", {}).get("username") != user:
            continue
        ref = event.get("objectRef") or {}
        if namespace is not None and ref.get("namespace") != namespace:
            continue
        if dry_run is not None and ("dryRun=All" in event.get("requestURI", "")) != dry_run:
            continue
        if after is not None:
            received = dt.datetime.fromisoformat(event["requestReceivedTimestamp"])
            if received < after:
                continue
        resource = ref.get("resource")
        if not resource:
            continue  # non-resource URLs such as /readyz
        sub = ref.get("subresource")
        counts[f"{resource}/{sub}" if sub else resource] += 1
    return dict(counts)


def count_writes(
    log: Path,
    since: dt.datetime | None = None,
    *,
    user: str | None = None,
    namespace: str | None = None,
) -> dict[str, int]:
    """Write requests (create, update, patch, delete, deletecollection) per resource."""
    return count_requests(log, verbs=WRITE_VERBS, since=since, user=user, namespace=namespace)
