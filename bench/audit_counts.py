"""Counting a controller's own Kubernetes writes in the apiserver's audit log.

`k8s_writes_per_cr` is the operator's writes to its custom resources (the object and
its status subresource) from the first apply until the last one is Ready, per resource.
The benchmark runs the operator (and the floor controller) as a ServiceAccount of its
own, so the bench's creates, made with the admin certificate, are told apart by user;
Events are counted apart (they are writes to other resources, reported for
information). Pure functions over the decoded audit events, unit-tested without a
cluster.
"""

from __future__ import annotations

import datetime as dt
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

WRITE_VERBS = frozenset({"create", "update", "patch", "delete", "deletecollection"})
# The audit policy omits RequestReceived: each request is one of these.
_FINAL_STAGES = frozenset({"ResponseComplete", "Panic"})


def _resource(ref: Mapping[str, Any]) -> str:
    sub = ref.get("subresource")
    return f"{ref.get('resource')}/{sub}" if sub else str(ref.get("resource"))


def _writes(
    events: Iterable[Mapping[str, Any]],
    *,
    user: str,
    namespace: str,
    since: dt.datetime,
    until: dt.datetime,
) -> Iterator[tuple[str, int]]:
    """(resource, response code) of each write by `user` in `namespace` in the window."""
    for event in events:
        if event.get("stage") not in _FINAL_STAGES or event.get("verb") not in WRITE_VERBS:
            continue
        if (event.get("user") or {}).get("username") != user:
            continue
        ref = event.get("objectRef") or {}
        if ref.get("namespace") != namespace or not ref.get("resource"):
            continue
        received = dt.datetime.fromisoformat(event["requestReceivedTimestamp"])
        if since <= received <= until:
            yield _resource(ref), int((event.get("responseStatus") or {}).get("code") or 0)


def writes_by_resource(
    events: Iterable[Mapping[str, Any]],
    *,
    user: str,
    namespace: str,
    since: dt.datetime,
    until: dt.datetime,
    failed_only: bool = False,
) -> Counter[str]:
    """Write requests by `user` in `namespace` received in [since, until], by resource
    (`agentdeployments`, `agentdeployments/status`, `events`). Failed writes count: an
    attempted write costs the apiserver all the same; `failed_only` counts only those
    (answered 400 or above, e.g. Kopf's JSON patches refused with 422 when their
    resourceVersion test loses a race)."""
    writes = _writes(events, user=user, namespace=namespace, since=since, until=until)
    return Counter(resource for resource, code in writes if not failed_only or code >= 400)


def requests_by_verb(
    events: Iterable[Mapping[str, Any]], *, user: str, since: dt.datetime, until: dt.datetime
) -> Counter[str]:
    """Every request by `user` in [since, until], reads too and in any namespace, as
    `verb resource` (`patch agentdeployments/status`, `watch namespaces`): what a
    controller costs the apiserver besides its writes."""
    counts: Counter[str] = Counter()
    for event in events:
        if event.get("stage") not in _FINAL_STAGES:
            continue
        if (event.get("user") or {}).get("username") != user:
            continue
        received = dt.datetime.fromisoformat(event["requestReceivedTimestamp"])
        ref = event.get("objectRef") or {}
        if since <= received <= until and ref.get("resource"):
            counts[f"{event.get('verb')} {_resource(ref)}"] += 1
    return counts


def writes_per_cr(counts: Mapping[str, int], plural: str, n: int) -> float:
    """Writes to the custom resources themselves (`plural` and `plural/status`) per
    resource; Events and anything else are left out."""
    if n <= 0:
        raise ValueError("n must be positive")
    own = sum(count for resource, count in counts.items() if resource.split("/")[0] == plural)
    return own / n
