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
from collections.abc import Iterable, Sized
from functools import partial
from typing import Any, Protocol

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, start_http_server
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from deployplane.reconcile.conditions import (
    TRUE,
    Condition,
    ConditionType,
    condition_status,
    find_condition,
)
from deployplane.reconcile.outcome import Outcome

_LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
CONDITIONS = tuple(ConditionType)
# Sample suffixes prometheus_client writes per family type.
_SUFFIXES = {
    "counter": ("_total", "_created"),
    "histogram": ("_bucket", "_count", "_sum", "_created"),
    "gauge": ("",),
}


def result_of(outcome: Outcome[Any]) -> str:
    """One word for a reconcile's result: ready, progressing, retrying or stalled."""
    return outcome.state.value


def _since(ready: Condition | None, now: float) -> float:
    """When the resource stopped being Ready: the condition's lastTransitionTime (kept in
    the resource, so it survives an operator restart), else now."""
    if ready is not None:
        try:
            stamp = ready.last_transition_time.replace("Z", "+00:00")
            return dt.datetime.fromisoformat(stamp).timestamp()
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
        self.events_dropped = Counter(
            "deployplane_events_dropped",
            "Kubernetes Events not posted: the recorder's queue was full, or the operator "
            "stopped before posting them (DEPLOYPLANE_EVENT_QPS, DEPLOYPLANE_EVENT_BURST).",
            registry=self.registry,
        )
        self.events_pending = Gauge(
            "deployplane_events_pending",
            "Kubernetes Events recorded and not yet posted (posted at DEPLOYPLANE_EVENT_QPS).",
            registry=self.registry,
        )
        self.revisions = self._gauge(
            "deployplane_revisions",
            "Resources by the status of their latest revision.",
            "kind",
            "status",
        )
        self.not_ready = self._gauge(
            "deployplane_resources_not_ready",
            "Resources whose Ready condition is not True.",
            "kind",
        )
        self.conditions = self._gauge(
            "deployplane_resources",
            "Resources by condition type and status (Ready, Synced, Reconciling, Stalled).",
            "kind",
            "condition",
            "status",
        )
        self.not_ready_since = self._gauge(
            "deployplane_resources_not_ready_since_timestamp_seconds",
            "Unix time since which the longest not-Ready resource of the kind is not Ready "
            "(its Ready condition's lastTransitionTime); absent when all are Ready.",
            "kind",
        )
        self._revision_of: dict[tuple[str, str], str] = {}
        self._conditions_of: dict[tuple[str, str], tuple[tuple[str, str], ...]] = {}
        self._not_ready: dict[str, dict[str, float]] = {}
        self._clock = time.time

    def _gauge(self, name: str, documentation: str, *labels: str) -> Gauge:
        return Gauge(name, documentation, labels, registry=self.registry)

    def serve(self, port: int, addr: str) -> None:
        start_http_server(port, addr=addr, registry=self.registry)

    def observe_api(self, method: str, endpoint: str, code: int, seconds: float) -> None:
        self.api_requests.labels(endpoint, method, str(code)).inc()
        self.api_latency.labels(endpoint, method).observe(seconds)

    def observe_outcome(self, kind: str, key: str, outcome: Outcome[Any]) -> None:
        self.reconciles.labels(kind, result_of(outcome)).inc()
        status = outcome.status
        self._set_revision(kind, key, status.revision_status)
        conditions = tuple(
            (str(type_), condition_status(status.conditions, type_)) for type_ in CONDITIONS
        )
        self._set_conditions(kind, key, conditions)
        ready = find_condition(status.conditions, ConditionType.READY)
        keys = self._not_ready.setdefault(kind, {})
        if ready is not None and ready.status == TRUE:
            keys.pop(key, None)
        elif key not in keys or ready is not None:
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
            # The oldest is found when Prometheus scrapes, not on every pass: a minimum
            # over every not-Ready resource per pass was quadratic in a burst.
            self.not_ready_since.labels(kind).set_function(partial(self._oldest, kind))
        else:
            with contextlib.suppress(KeyError):  # never set
                self.not_ready_since.remove(kind)

    def _oldest(self, kind: str) -> float:
        return min(self._not_ready.get(kind, {}).values(), default=self._clock())

    def watch_events(self, recorder: Sized) -> None:
        """Report the Events waiting in `recorder` (read when Prometheus scrapes)."""
        self.events_pending.set_function(lambda: float(len(recorder)))

    def watch_health(self, health: FailingSource) -> None:
        """Report how long each way of talking to Kubernetes has been failing
        (`deployplane_kube_failing_seconds{what}`: `api`, `watch <plural> [in <ns>]`;
        absent while it works), read when Prometheus scrapes."""
        self.registry.register(_FailingCollector(health))

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


class FailingSource(Protocol):
    def failing(self) -> dict[str, float]: ...


class _FailingCollector(Collector):
    def __init__(self, health: FailingSource) -> None:
        self.health = health

    def collect(self) -> Iterable[Metric]:
        family = GaugeMetricFamily(
            "deployplane_kube_failing_seconds",
            "Seconds the Kubernetes API (what=api) or a watch (what=watch <plural>) has been "
            "failing; readiness fails past DEPLOYPLANE_UNHEALTHY_AFTER.",
            labels=["what"],
        )
        for what, seconds in sorted(self.health.failing().items()):
            family.add_metric([what], seconds)
        yield family


def exported_metric_names(registry: CollectorRegistry | None = None) -> frozenset[str]:
    """Every sample name the operator can export (the chart's queries may use only these)."""
    families: Iterable[Any] = (registry or OperatorMetrics().registry).collect()
    return frozenset(
        family.name + suffix for family in families for suffix in _SUFFIXES[family.type]
    )
