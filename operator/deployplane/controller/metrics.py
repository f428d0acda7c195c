"""Prometheus metrics of the operator, served on DEPLOYPLANE_METRICS_PORT at /metrics.

The reconciler and the client know nothing of Prometheus: the client reports each
response through its `on_response` hook and the resource loop each outcome through
`on_outcome`; this module turns those into series. Gauges are kept per resource so a
resource changing state (or going away) moves its count instead of adding to it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, start_http_server

from deployplane.reconcile.reconciler import Outcome

_LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


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
        self._revision_of: dict[tuple[str, str], str] = {}
        self._not_ready: dict[str, set[str]] = {}

    def serve(self, port: int, addr: str) -> None:
        start_http_server(port, addr=addr, registry=self.registry)

    def observe_api(self, method: str, endpoint: str, code: int, seconds: float) -> None:
        self.api_requests.labels(endpoint, method, str(code)).inc()
        self.api_latency.labels(endpoint, method).observe(seconds)

    def observe_outcome(self, kind: str, key: str, outcome: Outcome) -> None:
        self.reconciles.labels(kind, result_of(outcome)).inc()
        revision = (outcome.status.get("revision") or {}).get("status")
        self._set_revision(kind, key, revision)
        ready = _condition(outcome.status, "Ready").get("status") == "True"
        keys = self._not_ready.setdefault(kind, set())
        (keys.discard if ready else keys.add)(key)
        self.not_ready.labels(kind).set(len(keys))

    def forget(self, kind: str, key: str) -> None:
        """The resource is gone: drop it from every gauge."""
        self._set_revision(kind, key, None)
        keys = self._not_ready.setdefault(kind, set())
        keys.discard(key)
        self.not_ready.labels(kind).set(len(keys))

    def _set_revision(self, kind: str, key: str, revision: str | None) -> None:
        old = self._revision_of.pop((kind, key), None)
        if old is not None:
            self.revisions.labels(kind, old).dec()
        if revision is not None:
            self._revision_of[(kind, key)] = revision
            self.revisions.labels(kind, revision).inc()
