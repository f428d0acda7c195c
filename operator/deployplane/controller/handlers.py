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

This module holds the handlers and their registration only. What they start is built
by `runtime.py` (Kopf-free); the Kopf settings and the GC tuning applied at start-up,
and why, are `tuning.py`'s; `kopfwatch.install` is the one adapter over Kopf's
internals, for what Kopf's public surface lacks (quick empty watches back off; stream
health; pause); it looks at Kopf's streams and changes none of their events.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from functools import partial
from typing import Any

import kopf

from deployplane.controller import kopfwatch, probes
from deployplane.controller.config import OperatorConfig
from deployplane.controller.runtime import Runtime, build_runtime
from deployplane.controller.sharding import Sharding
from deployplane.controller.tuning import tune_gc, tune_kopf
from deployplane.kinds import KINDS, KindDef, KindRegistry
from deployplane.kube.api import KubernetesApi
from deployplane.kube.credentials import bearer_token, load_configuration
from deployplane.kube.paths import GROUP, SHARD_LABEL, VERSION
from deployplane.kube.retry import Backoff
from deployplane.serving.probes import ProbeServer, ask_apiserver

log = logging.getLogger("deployplane.operator")


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
        apiserver=ask_apiserver(asker),
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
