"""The operator's runtime, built once at start-up: the Kubernetes client, the
connections to the control plane, one pass runner per kind (its reconciler over its
external client), the pool of workers, the event recorder, the metrics and the health
clock. Kopf-free: the handlers (`handlers.py`) build it in Kopf's start-up handler and
keep it in the operator's memo; tests and benchmarks build it directly."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from deployplane.api.connection import ConnectionSettings
from deployplane.controller.config import OperatorConfig
from deployplane.controller.metrics import OperatorMetrics
from deployplane.controller.outputstore import OutputsStore
from deployplane.controller.sharding import Sharding
from deployplane.externals.bindings import BINDINGS, Bindings
from deployplane.externals.connections import Connections
from deployplane.kinds import KINDS, KindRegistry
from deployplane.kinds.controlplaneconnection.kind import KIND as CONNECTION_KIND
from deployplane.kube.api import KubernetesApi
from deployplane.kube.health import FailureClock
from deployplane.reconcile.eventrecorder import EventRecorder
from deployplane.reconcile.passes import PassRunner
from deployplane.reconcile.schedule import Schedule
from deployplane.reconcile.usage import Dependency
from deployplane.reconcile.workers import Workers
from deployplane.serving import probes
from deployplane.serving.probes import ProbeServer, Readiness

WORKERS = 64
"""Passes at a time: about the control-plane client's requests in flight."""


@dataclass
class Runtime:
    """Everything the handlers share, built once at startup and kept in the operator memo."""

    config: OperatorConfig
    kube: KubernetesApi
    connections: Connections
    metrics: OperatorMetrics
    workers: Workers
    """The bounded pool that runs every kind's passes; `workers.runners` holds one
    pass runner per kind, keyed by `KindDef.kind`."""
    events: EventRecorder
    """Posts the passes' Events in the background, at `config.event_qps`."""
    health: FailureClock
    """How long the Kubernetes API and each watch have been failing (readiness)."""
    readiness: Readiness
    """What the readiness probe looks at (`deployplane.controller.probes`)."""
    readiness_server: ProbeServer | None = None
    closing: list[Callable[[], Awaitable[None]]] = field(default_factory=list)
    """What to close at clean-up beside the above: readiness's own clients."""
    last_event: dict[str, float] = field(default_factory=dict)
    """When (`clock`) the handlers last saw an event of each kind, for the probe's answer."""
    clock: Callable[[], float] = time.monotonic


def pass_runners(
    kinds: KindRegistry,
    bindings: Bindings,
    connections: Connections,
    kube: KubernetesApi,
    schedule: Schedule,
    metrics: OperatorMetrics,
) -> dict[str, PassRunner[Any, Any]]:
    """One pass runner per kind: its reconciler over its external client, and what
    lets go of what its resources hold once finalized (`Bindings.releaser`)."""
    return {
        kind.kind: PassRunner(
            bindings.reconciler(kind, connections, kube, schedule),
            kind.spec_model,
            kind.plural,
            kube,
            on_outcome=partial(metrics.observe_outcome, kind.kind),
            status_model=kind.status_model,
            on_gone=partial(metrics.forget, kind.kind),
            config_maps=OutputsStore(kube),
            releaser=bindings.releaser(kind, connections, kube),
        )
        for kind in kinds
    }


def dependencies_of(kinds: KindRegistry) -> dict[str, Dependency]:
    """The kinds the others depend on (`KindDef.used_by`), for the workers."""
    return {
        kind.kind: Dependency(kind.used_by, kind.shared_by)
        for kind in kinds
        if kind.used_by is not None
    }


def build_runtime(
    config: OperatorConfig,
    kube: KubernetesApi,
    kinds: KindRegistry = KINDS,
    health: FailureClock | None = None,
    indices: Mapping[str, Any] | None = None,
    sharding: Sharding | None = None,
    apiserver: probes.Ask | None = None,
    bindings: Bindings = BINDINGS,
) -> Runtime:
    """`indices`: Kopf's indices by id (`KindDef.index_id`), live; the connections are
    read from the ControlPlaneConnection kind's. A label-sharded instance lists a
    connection's users from the apiserver when it is deleted (its watch holds only its
    shard's: `deployplane.reconcile.usage`). `apiserver`: how readiness asks the
    apiserver (default: through `kube`). `bindings`: each kind's external client."""
    schedule = Schedule(
        poll_initial=config.poll_interval,
        poll_max=max(config.poll_max_interval, config.poll_interval),
        resync=config.resync_interval,
    )
    metrics = OperatorMetrics()

    connections = Connections(
        config.default_connection(),
        kube,
        factory=partial(ConnectionSettings.client, on_response=metrics.observe_api),
        index=(indices or {}).get(CONNECTION_KIND.index_id),
        keeper=kube,
    )
    runners = pass_runners(kinds, bindings, connections, kube, schedule, metrics)
    events = EventRecorder(
        kube.post_event,
        qps=config.event_qps,
        burst=config.event_burst,
        on_drop=metrics.events_dropped.inc,
    )
    metrics.watch_events(events)
    lister = kube if (sharding or Sharding()).enabled else None
    workers = Workers(
        runners,
        kube,
        events,
        size=WORKERS,
        dependencies=dependencies_of(kinds),
        lister=lister,
        on_ready_elsewhere=connections.forget_key,
    )
    health = health or FailureClock()
    metrics.watch_health(health)
    readiness, closing = probes.build_readiness(
        health,
        apiserver or probes.ask_apiserver(kube),
        config.default_connection(),
        config.unhealthy_after,
    )
    return Runtime(
        config, kube, connections, metrics, workers, events, health, readiness, closing=closing
    )
