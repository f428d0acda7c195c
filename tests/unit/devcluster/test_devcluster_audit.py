"""The audit-log counter behind steady-state measurements: which events count."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

from deployplane.devcluster.audit import count_requests, count_writes

T0 = dt.datetime(2026, 1, 1, 12, 0, 0, tzinfo=dt.UTC)


def _event(
    verb: str,
    resource: str | None,
    *,
    at: dt.datetime = T0,
    user: str = "alice",
    namespace: str | None = "ns",
    subresource: str | None = None,
    stage: str = "ResponseComplete",
) -> dict[str, Any]:
    ref: dict[str, Any] = {}
    if resource is not None:
        ref = {"resource": resource, "namespace": namespace}
        if subresource:
            ref["subresource"] = subresource
    return {
        "stage": stage,
        "verb": verb,
        "user": {"username": user},
        "objectRef": ref or None,
        "requestReceivedTimestamp": at.isoformat().replace("+00:00", "Z"),
    }


def _log(tmp_path: Path, events: list[dict[str, Any]], tail: str = "") -> Path:
    path = tmp_path / "audit.log"
    path.write_text("".join(json.dumps(e) + "\n" for e in events) + tail)
    return path


def test_counts_writes_per_resource_and_subresource(tmp_path: Path) -> None:
    log = _log(
        tmp_path,
        [
            _event("create", "configmaps"),
            _event("patch", "configmaps"),
            _event("update", "widgets", subresource="status"),
            _event("delete", "configmaps"),
            _event("deletecollection", "secrets"),
            _event("get", "configmaps"),
            _event("list", "configmaps"),
            _event("watch", "configmaps"),
        ],
    )
    assert count_writes(log) == {"configmaps": 3, "widgets/status": 1, "secrets": 1}
    assert count_requests(log, verbs={"get", "list"}) == {"configmaps": 2}


def test_filters_by_time_user_and_namespace(tmp_path: Path) -> None:
    log = _log(
        tmp_path,
        [
            _event("create", "configmaps", at=T0 - dt.timedelta(microseconds=1)),
            _event("create", "configmaps", at=T0),
            _event("create", "configmaps", user="bob"),
            _event("create", "configmaps", namespace="other"),
        ],
    )
    assert count_writes(log, T0, user="alice", namespace="ns") == {"configmaps": 1}
    assert count_writes(log, T0) == {"configmaps": 3}
    # A naive `since` is local time, as datetime.now() returns it.
    naive = T0.astimezone().replace(tzinfo=None)
    assert count_writes(log, naive, user="alice", namespace="ns") == {"configmaps": 1}


def test_ignores_other_stages_non_resource_urls_and_a_half_written_line(tmp_path: Path) -> None:
    log = _log(
        tmp_path,
        [
            _event("create", "configmaps", stage="ResponseStarted"),
            _event("get", None),
            _event("create", "configmaps"),
        ],
        tail='{"stage": "ResponseComplete", "verb": "cre',
    )
    assert count_writes(log) == {"configmaps": 1}
    assert count_requests(log) == {"configmaps": 1}


def test_missing_log_counts_nothing(tmp_path: Path) -> None:
    assert count_writes(tmp_path / "absent.log") == {}


def test_dry_runs_are_told_apart_from_writes(tmp_path: Path) -> None:
    uri = "/apis/deployplane.io/v1alpha1/namespaces/ns/agentdeployments"
    log = _log(
        tmp_path,
        [
            {**_event("create", "agentdeployments"), "requestURI": f"{uri}?dryRun=All"},
            {**_event("update", "agentdeployments"), "requestURI": f"{uri}/a?dryRun=All&x=1"},
            {**_event("create", "agentdeployments"), "requestURI": uri},
        ],
    )
    assert count_requests(log, dry_run=True) == {"agentdeployments": 2}
    assert count_requests(log, dry_run=False) == {"agentdeployments": 1}
    assert count_requests(log) == {"agentdeployments": 3}
