"""The Kopf layer: thin. Kopf runs the process (login, start-up and clean-up, peering,
liveness) and lists and watches every kind of the registry (one `kopf.on.event`
handler per kind); each watch event reaches `on_event` through Kopf's handler
machinery, which hands it to the pool of workers (`deployplane.reconcile.workers`)
and returns. The workers reconcile, finalize and take our finalizer off, and
the event recorder posts the Events. The handlers are event handlers only, so Kopf
puts no finalizer of its own on any object and writes nothing to it.

Run with `deployplane operator run`, or as any Kopf operator:
`kopf run -m deployplane.controller.handlers --namespace 'team-*'` (globs, and
namespaces created later, are Kopf's own).

The Kopf settings chosen (`configure`), and why (docs/architecture.md, "Kopf settings"):
- posting off: the event recorder posts ours at a bounded rate;
- no diff-base: Kopf deep-copies every event's essence to detect changes for
  on.create/update handlers, and there are none;
- watch renewed every 5 minutes by the server (`server_timeout`), cut by the client
  after 6 without an answer, 10 s to connect, and reopened by Kopf after 70 s without
  any event or bookmark (`inactivity_timeout`): a half-open connection is noticed;
- Retry-After enforced, error backoffs jittered;
- per-object workers idle out after 1 s (Kopf keeps one task per object that has
  had an event, 5 s by default: 1,000 tasks after a burst);
- `kopfwatch.install`: the one adapter over Kopf's internals, for what Kopf's public
  surface lacks (quick empty watches back off; stream health; pause); it looks at
  Kopf's streams and changes none of their events.
"""

from __future__ import annotations

import gc
import logging
import random
import time
from collections.abc import Awaitable, Callable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import kopf

from deployplane.api.client import ControlPlaneClient
from deployplane.controller import kopfwatch, probes
from deployplane.controller.config import OperatorConfig
from deployplane.controller.metrics import OperatorMetrics
from deployplane.controller.outputstore import OutputsStore
from deployplane.controller.probes import ProbeServer, Readiness
from deployplane.controller.sharding import SHARD_LABEL, Sharding
from deployplane.externals.connections import Connection, Connections
from deployplane.externals.errors import classified
from deployplane.kinds import KINDS, KindDef, KindRegistry
from deployplane.kinds.controlplaneconnection import KIND as CONNECTION_KIND
from deployplane.kube.api import KubernetesApi
from deployplane.kube.credentials import bearer_token, load_configuration
from deployplane.kube.health import FailureClock
from deployplane.kube.paths import GROUP, VERSION
from deployplane.kube.retry import Backoff
from deployplane.reconcile.eventrecorder import EventRecorder
from deployplane.reconcile.passes import PassRunner
from deployplane.reconcile.reconciler import Reconciler
from deployplane.reconcile.schedule import Schedule
from deployplane.reconcile.workers import Workers

log = logging.getLogger("deployplane.operator")

INACTIVITY_TIMEOUT = 70.0
"""A stream that brings nothing, not even a bookmark, for this long is dead: Kopf
reconnects it (the apiserver sends bookmarks every minute and keeps 75 s of events)."""

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
    connections: Connections,
    kube: KubernetesApi,
    schedule: Schedule,
    metrics: OperatorMetrics,
) -> dict[str, PassRunner[Any, Any]]:
    """One pass runner per kind: its reconciler over its external client."""
    return {
        kind.kind: PassRunner(
            Reconciler(
                classified(kind.connecter(connections, kube)), kind=kind.noun, schedule=schedule
            ),
            kind.spec_model,
            kind.plural,
            kube,
            on_outcome=partial(metrics.observe_outcome, kind.kind),
            status_model=kind.status_model,
            on_gone=partial(metrics.forget, kind.kind),
            config_maps=OutputsStore(kube),
        )
        for kind in kinds
    }


def build_runtime(
    config: OperatorConfig,
    kube: KubernetesApi,
    kinds: KindRegistry = KINDS,
    health: FailureClock | None = None,
    indices: Mapping[str, Any] | None = None,
    sharding: Sharding | None = None,
    apiserver: probes.Ask | None = None,
) -> Runtime:
    """`indices`: Kopf's indices by id (`KindDef.index_id`), live; the connections
    are read from the ControlPlaneConnection kind's. A label-sharded instance lists a
    connection's users from the apiserver when it is deleted (its watch holds only its
    shard's: `deployplane.reconcile.usage`). `apiserver`: how readiness asks the apiserver
    (default: through `kube`)."""
    schedule = Schedule(
        poll_initial=config.poll_interval,
        poll_max=max(config.poll_max_interval, config.poll_interval),
        resync=config.resync_interval,
    )
    metrics = OperatorMetrics()

    def client_factory(conn: Connection) -> ControlPlaneClient:
        return conn.client(on_response=metrics.observe_api)

    connections = Connections(
        config.default_connection(),
        kube,
        factory=client_factory,
        index=(indices or {}).get(CONNECTION_KIND.index_id),
    )
    runners = pass_runners(kinds, connections, kube, schedule, metrics)
    events = EventRecorder(
        kube.post_event,
        qps=config.event_qps,
        burst=config.event_burst,
        on_drop=metrics.events_dropped.inc,
    )
    metrics.watch_events(events)
    dependencies = {kind.kind: kind.used_by for kind in kinds if kind.used_by is not None}
    lister = kube if (sharding or Sharding()).enabled else None
    workers = Workers(
        runners,
        kube,
        events,
        size=WORKERS,
        dependencies=dependencies,
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


@kopf.on.login()
def login(**_: Any) -> kopf.ConnectionInfo:
    """In-cluster service account, else $KUBECONFIG (exec plugins and OIDC included),
    read anew at every login: Kopf logs in again when the apiserver answers 401, so an
    expired or rotated token is replaced without a restart."""
    cfg = load_configuration()
    token = bearer_token(cfg)
    return kopf.ConnectionInfo(
        server=cfg.host,
        ca_path=cfg.ssl_ca_cert,
        insecure=not cfg.verify_ssl,
        scheme="Bearer" if token else None,
        token=token,
        certificate_path=cfg.cert_file,
        private_key_path=cfg.key_file,
    )


class NoDiffBase(kopf.DiffBaseStorage):
    """No diff-base: Kopf builds and diffs one for every event to detect changes for
    on.create/update/delete handlers; with event handlers only it is pure cost."""

    def build(self, *, body: Any, extra_fields: Any = None) -> Any:
        return None

    def fetch(self, *, body: Any) -> None:
        return None

    def store(self, *, body: Any, patch: Any, essence: Any) -> None:
        return None


class JitteredBackoffs:
    """Kopf's API error backoffs, each up to 20% longer at random (re-iterable: Kopf
    iterates it afresh for every request)."""

    def __init__(self, delays: tuple[float, ...] = (1, 1, 2, 3, 5, 8, 13, 21)) -> None:
        self.delays = delays

    def __iter__(self) -> Iterator[float]:
        return (d * (1.0 + 0.2 * random.random()) for d in self.delays)

    def __len__(self) -> int:
        return len(self.delays)


def tune_kopf(
    settings: kopf.OperatorSettings, sharding: Sharding | None = None, kinds: KindRegistry = KINDS
) -> None:
    """The Kopf settings of the module docstring, and the shard's watch selectors:
    every kind but the indexed ones (connections, which every instance reads whole) is
    watched through the shard's label selector (`deployplane.controller.sharding`)."""
    selector = (sharding or Sharding()).label_selector()
    if selector is not None:
        for kind in kinds:
            if not kind.indexed:
                settings.watching.label_selectors[GROUP, VERSION, kind.plural] = selector
    settings.posting.enabled = False
    settings.persistence.diffbase_storage = NoDiffBase()
    settings.watching.server_timeout = 300
    settings.watching.client_timeout = 360
    settings.watching.connect_timeout = 10
    settings.watching.inactivity_timeout = INACTIVITY_TIMEOUT
    settings.networking.request_timeout = 60
    settings.networking.enforce_retry_after = True
    settings.networking.error_backoffs = JitteredBackoffs()
    settings.queueing.idle_timeout = 1.0


@kopf.on.startup()
async def configure(settings: kopf.OperatorSettings, memo: kopf.Memo, **kwargs: Any) -> None:
    """Builds the runtime. Kopf hands its indices over as keyword arguments, live (they
    fill as the watches list, before any event handler runs)."""
    sharding = Sharding.from_env()
    tune_kopf(settings, sharding)
    config = OperatorConfig.from_env()
    # What Kopf was told to watch (`operator run` puts --namespace here); a resource
    # elsewhere is never seen. The probe's `scope` says what it lists.
    log.info("watching %s", config.scope())
    log.info("reconciling %s", sharding.describe())
    # Quiet kopf's per-handler INFO chatter ("Handler ... succeeded") at scale.
    logging.getLogger("kopf.objects").setLevel(logging.WARNING)
    logging.getLogger("httpx").setLevel(logging.WARNING)  # one line per API call otherwise
    kube = KubernetesApi.from_environment(health=kopfwatch.GUARD.health)
    # Readiness asks on a connection of its own, never retried: not behind the passes.
    asker = KubernetesApi.from_environment(max_in_flight=1, backoff=Backoff(attempts=0))
    memo.runtime = runtime = build_runtime(
        config,
        kube,
        health=kopfwatch.GUARD.health,
        indices=kwargs,
        sharding=sharding,
        apiserver=probes.ask_apiserver(asker),
    )
    runtime.closing.append(asker.aclose)
    if settings.peering.mandatory:
        # Kopf starts paused with peering on, until its first look at the peers; the
        # queue waits with it (the adapter resumes it with the first watch).
        runtime.workers.queue.pause()
    kopfwatch.GUARD.on_pause = runtime.workers.queue.pause
    runtime.workers.start()
    runtime.events.start()
    tune_gc()
    if config.metrics_port is not None:
        runtime.metrics.serve(config.metrics_port, config.metrics_addr)
    if config.readiness is not None:
        runtime.readiness_server = ProbeServer(config.readiness, runtime.readiness.check)
        await runtime.readiness_server.start()


async def on_event(kind: str, event: Mapping[str, Any], memo: kopf.Memo, **_: Any) -> None:
    """Every watch event of `kind` (type None: listed): to the workers, as it came.

    A coroutine on purpose: Kopf runs a plain function in its thread-pool executor (one
    thread hop, a context copy and a shielded task per event), and the work queue and
    the tracked bodies belong to the event loop's thread, so a sync handler would both
    cost more per event and touch them from another thread."""
    runtime: Runtime | None = getattr(memo, "runtime", None)
    if runtime is not None:
        runtime.last_event[kind] = runtime.clock()
        runtime.workers.observe(kind, event.get("type"), event["object"])


async def on_release(kind: str, event: Mapping[str, Any], memo: kopf.Memo, **_: Any) -> None:
    """An event of a resource of `kind` this instance watches but does not own (its
    shard label says another instance's): let go of it if it was ours, wake ours that
    wait for it if it turned Ready (`Workers.release`)."""
    runtime: Runtime | None = getattr(memo, "runtime", None)
    if runtime is not None:
        runtime.workers.release(kind, event["object"], event.get("type"))


def index_spec(kind: KindDef[Any], namespace: str, name: str, spec: Any, **_: Any) -> Any:
    """A `kopf.index` handler: the object's spec, as its kind's model, by (namespace,
    name); nothing for a spec the model refuses (the CRD's schema normally does)."""
    try:
        return {(namespace, name): kind.spec_model.model_validate(dict(spec))}
    except ValueError as exc:
        log.warning("%s %s/%s: not indexed: %s", kind.kind, namespace, name, exc)
        return {}


def shard_filters(sharding: Sharding) -> tuple[dict[str, Any], dict[str, Any]]:
    """Kopf's label filters of a sharded instance: its own resources, and the others'."""
    if sharding.shard is None:
        return {SHARD_LABEL: kopf.ABSENT}, {SHARD_LABEL: kopf.PRESENT}
    return {SHARD_LABEL: sharding.shard}, {SHARD_LABEL: sharding.disowns_value}


def register(
    kinds: KindRegistry = KINDS, registry: Any = None, sharding: Sharding | None = None
) -> None:
    """One event handler per kind of the registry, and an index of each indexed kind.

    Sharded, an indexed kind is watched whole (its index is every instance's) and its
    handler filtered by Kopf on the shard label, with a second handler, filtered on the
    complement, that lets go of a resource whose label moved to another shard; the
    other kinds are filtered by the apiserver (`tune_kopf`)."""
    sharding = sharding or Sharding()
    for kind in kinds:
        handler = partial(on_event, kind.kind)
        on = partial(kopf.on.event, GROUP, VERSION, kind.plural, registry=registry)
        if not (kind.indexed and sharding.enabled):
            on(id=f"watch-{kind.plural}")(handler)
        else:
            mine, theirs = shard_filters(sharding)
            on(id=f"watch-{kind.plural}", labels=mine)(handler)
            on(id=f"release-{kind.plural}", labels=theirs)(partial(on_release, kind.kind))
        if kind.indexed:
            kopf.index(GROUP, VERSION, kind.plural, id=kind.index_id, registry=registry)(
                partial(index_spec, kind)
            )


register(sharding=Sharding.from_env())
kopfwatch.install()


@kopf.on.probe(id="alive")
async def alive(memo: kopf.Memo, **_: Any) -> dict[str, Any]:
    """Liveness (`deployplane.controller.probes`): answered from the event loop, it
    fails (HTTP 500) only when a task that moves the work has ended. What has been
    failing on the Kubernetes side, and how long ago the handlers last saw an event of
    each kind, only inform: readiness judges the first, and a quiet cluster sends no
    event for hours (Kopf reopens a silent stream by itself)."""
    runtime: Runtime = memo.runtime
    ended = probes.stalled(runtime.workers, runtime.events)
    if ended:
        raise kopf.PermanentError("stuck: " + "; ".join(ended))
    now = runtime.clock()
    seen = {f"seconds since a {kind} event": now - at for kind, at in runtime.last_event.items()}
    return {**runtime.health.failing(), **seen}


@kopf.on.probe(id="scope")
def scope(**_: Any) -> dict[str, str]:
    """The namespaces this instance watches, as Kopf lists them (`every namespace`, or
    their names, globs resolved): a resource anywhere else is never seen, so it gets no
    status, Event or finalizer (docs/install.md, "The operator's scope")."""
    return {"watching": kopfwatch.GUARD.scope()}


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


@kopf.on.cleanup()
async def close_clients(memo: kopf.Memo, **_: Any) -> None:
    runtime: Runtime = memo.runtime
    if runtime.readiness_server is not None:
        await runtime.readiness_server.stop()  # unready while the passes drain
    for close in runtime.closing:
        await close()
    await runtime.workers.stop(runtime.config.shutdown_timeout)
    await runtime.events.stop()
    await runtime.connections.aclose()
    await runtime.kube.aclose()
