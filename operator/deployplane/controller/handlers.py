"""The Kopf layer: thin. Kopf runs the process (login, start-up and clean-up, peering,
the liveness endpoint); it watches nothing. At start-up one informer per kind and
namespace (`deployplane.reconcile.informer`: list, then watch) hands every object to the
pool of workers (`deployplane.reconcile.workers`), which reconciles, finalizes and takes
our finalizer off, and the event recorder posts the Events. With no resource handlers,
Kopf puts no finalizer of its own on any object and keeps no per-object state.

Why not Kopf's own watch (`kopf.on.event`, as until issue 18): Kopf processed every
watch event in a cycle of its own before handing it over, ~12% of the operator's CPU
with 1,000 new resources (docs/benchmarks.md).

Run with `deployplane operator run`, or `kopf run -m deployplane.controller.handlers`
(then the namespaces watched are DEPLOYPLANE_NAMESPACES, all when unset: Kopf's own
`--namespace` flags no longer reach the watches).
"""

from __future__ import annotations

import asyncio
import gc
import logging
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import kopf

from deployplane.api.client import ControlPlaneClient
from deployplane.controller.config import OperatorConfig
from deployplane.controller.kubeapi import KubernetesApi
from deployplane.controller.metrics import OperatorMetrics
from deployplane.externals.connections import Connection, Connections
from deployplane.kinds import KINDS, KindRegistry
from deployplane.reconcile.eventrecorder import EventRecorder
from deployplane.reconcile.informer import Informer
from deployplane.reconcile.loop import ResourceLoop
from deployplane.reconcile.reconciler import Reconciler
from deployplane.reconcile.schedule import Schedule
from deployplane.reconcile.workers import Workers

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
    """The bounded pool that runs every kind's passes; `workers.loops` holds one
    reconcile loop per kind, keyed by `KindDef.kind`."""
    events: EventRecorder
    """Posts the passes' Events in the background, at `config.event_qps`."""
    informers: list[Informer] = field(default_factory=list)
    """One per kind and namespace watched (`start_informers`)."""
    tasks: list[asyncio.Task[None]] = field(default_factory=list)


def build_runtime(
    config: OperatorConfig, kube: KubernetesApi, kinds: KindRegistry = KINDS
) -> Runtime:
    schedule = Schedule(
        poll_initial=config.poll_interval,
        poll_max=max(config.poll_max_interval, config.poll_interval),
        resync=config.resync_interval,
    )
    metrics = OperatorMetrics()

    def client_factory(conn: Connection) -> ControlPlaneClient:
        return conn.client(on_response=metrics.observe_api)

    connections = Connections(config.default_connection(), kube, factory=client_factory)
    loops: dict[str, ResourceLoop[Any, Any]] = {
        kind.kind: ResourceLoop(
            Reconciler(kind.connecter(connections, kube), kind=kind.noun, schedule=schedule),
            kind.spec_model,
            kind.plural,
            kube,
            on_outcome=partial(metrics.observe_outcome, kind.kind),
            status_model=kind.status_model,
            on_gone=partial(metrics.forget, kind.kind),
        )
        for kind in kinds
    }

    events = EventRecorder(
        kube.post_event,
        qps=config.event_qps,
        burst=config.event_burst,
        on_drop=metrics.events_dropped.inc,
    )
    metrics.watch_events(events)
    workers = Workers(loops, kube, events, size=WORKERS)
    return Runtime(config, kube, connections, metrics, workers, events)


@kopf.on.login()
def login(**kwargs: Any) -> kopf.ConnectionInfo | None:
    """In-cluster service account, else $KUBECONFIG read at login time (the kubernetes
    client's own default is frozen when it is imported, which breaks embedded use)."""
    info: kopf.ConnectionInfo | None = kopf.login_with_service_account(
        **kwargs
    ) or kopf.login_with_kubeconfig(**kwargs)
    return info


@kopf.on.startup()
async def configure(settings: kopf.OperatorSettings, memo: kopf.Memo, **_: Any) -> None:
    settings.posting.enabled = False  # the operator posts its own (the event recorder)
    settings.networking.request_timeout = 60
    # Quiet kopf's per-handler INFO chatter ("Handler ... succeeded") at scale.
    logging.getLogger("kopf.objects").setLevel(logging.WARNING)
    logging.getLogger("httpx").setLevel(logging.WARNING)  # one line per API call otherwise
    config = OperatorConfig.from_env()
    memo.runtime = runtime = build_runtime(config, KubernetesApi.from_environment())
    watch_peering(runtime.workers, paused=settings.peering.mandatory)
    runtime.workers.start()
    runtime.events.start()
    start_informers(runtime, namespaces_of(memo, config))
    tune_gc()
    if config.metrics_port is not None:
        runtime.metrics.serve(config.metrics_port, config.metrics_addr)


GC_THRESHOLDS = (10_000, 20, 20)
"""Python's are (700, 10, 10): with ~150,000 objects from the imports and a few hundred
per resource, a full collection walked all of them every few seconds of a converge
(up to 940 ms each, every request in flight waiting it out)."""


def tune_gc() -> None:
    """Once start-up is done: the objects of the imports and of start-up leave the
    collected generations for good (`gc.freeze`), and collections come less often."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)


class PeeringPause(logging.Filter):
    """Pauses the workers while Kopf's peering pauses this operator (a peer of a higher
    priority is alive) and resumes them with it, as Kopf stopped its daemons before.

    Kopf tells handlers nothing of it; it stops its watch streams and logs the change
    (`kopf._core.engines.peering`, "Pausing operations ..." / "Resuming operations
    ..."), which this filter reads. A unit test drives Kopf's own peering code through
    it, so a Kopf that says it differently fails that test, not production."""

    def __init__(self, workers: Workers) -> None:
        super().__init__()
        self.workers = workers

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if message.startswith(("Pausing operations", "Pausing all operators")):
            self.workers.queue.pause()
        elif message.startswith("Resuming operations"):
            self.workers.queue.pause(False)
        return True


PEERING_LOGGER = "kopf._core.engines.peering"


def watch_peering(workers: Workers, *, paused: bool = False) -> PeeringPause:
    """Pause and resume `workers` with Kopf's peering. `paused`: start paused, as Kopf
    does with peering on (`--peering NAME`): it holds everything until the first look
    at the peers, and a replica that finds a higher-priority peer there stays paused
    without saying so (it logs "Pausing" only when it was running); the informers feed
    the workers whatever Kopf does, so they must start held too, or a standby would
    reconcile beside the active replica until that replica died."""
    if paused:
        workers.queue.pause()
    hook = PeeringPause(workers)
    peering_log = logging.getLogger(PEERING_LOGGER)
    for old in [f for f in peering_log.filters if isinstance(f, PeeringPause)]:
        peering_log.removeFilter(old)  # an operator run again in one process (embedded)
    # Its INFO lines must be made whatever the log level (a rare line, printed or not as
    # the handlers decide).
    peering_log.setLevel(logging.INFO)
    peering_log.addFilter(hook)
    return hook


@kopf.on.cleanup()
async def close_clients(memo: kopf.Memo, **_: Any) -> None:
    await stop_informers(memo.runtime)
    await memo.runtime.workers.stop()
    await memo.runtime.events.stop()
    await memo.runtime.connections.aclose()
    await memo.runtime.kube.aclose()


def namespaces_of(memo: kopf.Memo, config: OperatorConfig) -> tuple[str, ...]:
    """The namespaces to watch: `deployplane operator run --namespace` (handed over in
    the memo), else DEPLOYPLANE_NAMESPACES; none means all."""
    given = getattr(memo, "namespaces", None)
    return tuple(given) if given else config.namespaces


def start_informers(
    runtime: Runtime, namespaces: tuple[str, ...], kinds: KindRegistry = KINDS
) -> None:
    """One informer per kind and namespace (one per kind cluster-wide), feeding the
    workers."""
    for kind in kinds:
        for namespace in namespaces or (None,):
            informer = Informer(
                runtime.kube, kind.plural, namespace, partial(runtime.workers.observe, kind.kind)
            )
            runtime.informers.append(informer)
            runtime.tasks.append(
                asyncio.create_task(informer.run(), name=f"informer {kind.plural} {namespace}")
            )


async def stop_informers(runtime: Runtime) -> None:
    for task in runtime.tasks:
        task.cancel()
    await asyncio.gather(*runtime.tasks, return_exceptions=True)
