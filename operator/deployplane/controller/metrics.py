"""Prometheus metrics of the operator, served on DEPLOYPLANE_METRICS_PORT at /metrics.

The reconciler and the client know nothing of Prometheus: the client reports each
response through its `on_response` hook and the resource loop each outcome through
`on_outcome`; this module turns those into series. Gauges are kept per resource so a
resource changing state (or going away) moves its count instead of adding to it.

The chart's Grafana dashboard and PrometheusRule (charts/deployplane/templates/
observability.yaml) query these series only; a unit test checks every expression there
against `exported_metric_names()`.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import time
from collections.abc import Iterable, Mapping
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, start_http_server

from deployplane.reconcile.reconciler import Outcome

_LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
CONDITIONS = ("Ready", "Synced", "Reconciling", "Stalled")
# Sample suffixes prometheus_client writes per family type.
_SUFFIXES = {
    "counter": ("_total", "_created"),
    "histogram": ("_bucket", "_count", "_sum", "_created"),
    "gauge": ("",),
}


def _condition(status: Mapping[str, Any], type_: str) -> Mapping[str, Any]:
    for cond in status.get("conditions", []):
        if cond.get("type") == type_:
            return dict(cond)
    return {}


def result_of(outcome: Outcome) -> str:
    """One word for a reconcile's result: ready, progressing, retrying or stalled."""
    status = outcome.status
    if _condition(status, "Stalled").get("status") == "True":
        return "stalled"
    if _condition(status, "Synced").get("status") == "False":
        return "retrying"
    if _condition(status, "Ready").get("status") == "True":
        return "ready"
    return "progressing"


def _since(ready: Mapping[str, Any], now: float) -> float:
    """When the resource stopped being Ready: the condition's lastTransitionTime (kept in
    the resource, so it survives an operator restart), else now."""
    stamp = ready.get("lastTransitionTime")
    if isinstance(stamp, str):
        try:
            return dt.datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
        except ValueError:
            pass
    return now


class OperatorMetrics:
    """All series of one operator process, in their own registry."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry()
        self.reconciles = Counter(
            "deployplane_reconciles",
            "Reconcile passes by kind and result.",
            ["kind", "result"],
            registry=self.registry,
        )
        self.api_requests = Counter(
            "deployplane_api_requests",
            "Control-plane API requests by endpoint, method and status code (0: no answer).",
            ["endpoint", "method", "code"],
            registry=self.registry,
        )
        self.api_latency = Histogram(
            "deployplane_api_request_duration_seconds",
            "Control-plane API request latency.",
            ["endpoint", "method"],
            buckets=_LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.revisions = Gauge(
            "deployplane_revisions",
            "Resources by the status of their latest revision.",
            ["kind", "status"],
            registry=self.registry,
        )
        self.not_ready = Gauge(
            "deployplane_resources_not_ready",
            "Resources whose Ready condition is not True.",
            ["kind"],
            registry=self.registry,
        )
        self.conditions = Gauge(
            "deployplane_resources",
            "Resources by condition type and status (Ready, Synced, Reconciling, Stalled).",
            ["kind", "condition", "status"],
            registry=self.registry,
        )
        self.not_ready_since = Gauge(
            "deployplane_resources_not_ready_since_timestamp_seconds",
            "Unix time since which the longest not-Ready resource of the kind is not Ready "
            "(its Ready condition's lastTransitionTime); absent when all are Ready.",
            ["kind"],
            registry=self.registry,
        )
        self._revision_of: dict[tuple[str, str], str] = {}
        self._conditions_of: dict[tuple[str, str], tuple[tuple[str, str], ...]] = {}
        self._not_ready: dict[str, dict[str, float]] = {}
        self._clock = time.time

    def serve(self, port: int, addr: str) -> None:
        start_http_server(port, addr=addr, registry=self.registry)

    def observe_api(self, method: str, endpoint: str, code: int, seconds: float) -> None:
        self.api_requests.labels(endpoint, method, str(code)).inc()
        self.api_latency.labels(endpoint, method).observe(seconds)

    def observe_outcome(self, kind: str, key: str, outcome: Outcome) -> None:
        self.reconciles.labels(kind, result_of(outcome)).inc()
        revision = (outcome.status.get("revision") or {}).get("status")
        self._set_revision(kind, key, revision)
        conditions = tuple(
            (type_, str(_condition(outcome.status, type_).get("status", "Unknown")))
            for type_ in CONDITIONS
        )
        self._set_conditions(kind, key, conditions)
        ready = _condition(outcome.status, "Ready")
        keys = self._not_ready.setdefault(kind, {})
        if ready.get("status") == "True":
            keys.pop(key, None)
        elif key not in keys or "lastTransitionTime" in ready:
            keys[key] = _since(ready, self._clock())
        self._publish_not_ready(kind)

    def forget(self, kind: str, key: str) -> None:
        """The resource is gone: drop it from every gauge."""
        self._set_revision(kind, key, None)
        self._set_conditions(kind, key, ())
        self._not_ready.setdefault(kind, {}).pop(key, None)
        self._publish_not_ready(kind)

    def _publish_not_ready(self, kind: str) -> None:
        keys = self._not_ready.get(kind, {})
        self.not_ready.labels(kind).set(len(keys))
        if keys:
            self.not_ready_since.labels(kind).set(min(keys.values()))
        else:
            with contextlib.suppress(KeyError):  # never set
                self.not_ready_since.remove(kind)

    def _set_conditions(self, kind: str, key: str, conditions: tuple[tuple[str, str], ...]) -> None:
        for type_, status in self._conditions_of.pop((kind, key), ()):
            self.conditions.labels(kind, type_, status).dec()
        if conditions:
            self._conditions_of[(kind, key)] = conditions
            for type_, status in conditions:
                self.conditions.labels(kind, type_, status).inc()

    def _set_revision(self, kind: str, key: str, revision: str | None) -> None:
        old = self._revision_of.pop((kind, key), None)
        if old is not None:
            self.revisions.labels(kind, old).dec()
        if revision is not None:
            self._revision_of[(kind, key)] = revision
            self.revisions.labels(kind, revision).inc()


def exported_metric_names(registry: CollectorRegistry | None = None) -> frozenset[str]:
    """Every sample name the operator can export (the chart's queries may use only these)."""
    families: Iterable[Any] = (registry or OperatorMetrics().registry).collect()
    return frozenset(
        family.name + suffix for family in families for suffix in _SUFFIXES[family.type]
    )
