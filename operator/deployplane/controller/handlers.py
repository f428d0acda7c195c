"""Kopf handlers: thin. They turn bodies into calls on the reconciler and back.

Every kind of the registry (`deployplane.kinds`) gets the same three handlers, registered
in one loop at import: a daemon per resource that runs its reconcile loop, an event
handler that wakes that loop when the spec changes, and a delete handler that finalizes
on the control plane (it and the daemon are why Kopf puts its finalizer on each object).

Run with `deployplane operator run`, or `kopf run -m deployplane.controller.handlers`.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

import kopf

from deployplane.api.client import ControlPlaneClient
from deployplane.controller.config import OperatorConfig
from deployplane.controller.kubeapi import KubernetesApi
from deployplane.controller.metrics import OperatorMetrics
from deployplane.controller.storage import NoDiffBaseStorage
from deployplane.crd.specs import GROUP, VERSION
from deployplane.externals.connections import Connection, Connections
from deployplane.kinds import KINDS, KindDef, KindRegistry
from deployplane.reconcile.loop import ResourceLoop, ResourceState
from deployplane.reconcile.outcome import EventRecord
from deployplane.reconcile.reconciler import Reconciler
from deployplane.reconcile.schedule import Schedule

FINALIZER = "deployplane.io/finalizer"
DAEMON_CANCELLATION_TIMEOUT = 10.0


@dataclass
class Runtime:
    """Everything the handlers share, built once at startup and kept in the operator memo."""

    config: OperatorConfig
    kube: KubernetesApi
    connections: Connections
    metrics: OperatorMetrics
    loops: dict[str, ResourceLoop[Any, Any]]
    """One reconcile loop per kind, keyed by `KindDef.kind`."""


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
        return ControlPlaneClient(
            conn.url,
            api_key=conn.api_key,
            tenant_id=conn.tenant_id,
            on_response=metrics.observe_api,
        )

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
    return Runtime(config=config, kube=kube, connections=connections, metrics=metrics, loops=loops)


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
    settings.persistence.finalizer = FINALIZER
    settings.persistence.progress_storage = kopf.AnnotationsProgressStorage(prefix="deployplane.io")
    settings.persistence.diffbase_storage = NoDiffBaseStorage()
    settings.posting.level = logging.WARNING  # our own events only, on transitions
    settings.watching.server_timeout = 300
    settings.watching.client_timeout = 330
    settings.networking.request_timeout = 60
    # Quiet kopf's per-handler INFO chatter ("Handler ... succeeded") at scale.
    logging.getLogger("kopf.objects").setLevel(logging.WARNING)
    logging.getLogger("httpx").setLevel(logging.WARNING)  # one line per API call otherwise
    config = OperatorConfig.from_env()
    memo.runtime = runtime = build_runtime(config, KubernetesApi.from_environment())
    if config.metrics_port is not None:
        runtime.metrics.serve(config.metrics_port, config.metrics_addr)


@kopf.on.cleanup()
async def close_clients(memo: kopf.Memo, **_: Any) -> None:
    await memo.runtime.connections.aclose()
    await memo.runtime.kube.aclose()


def _state(memo: kopf.Memo) -> ResourceState:
    state = memo.get("resource_state")
    if state is None:
        state = memo["resource_state"] = ResourceState()
    assert isinstance(state, ResourceState)
    return state


def _key(body: kopf.Body) -> str:
    """The resource as the metrics know it (the key `ResourceLoop` reports outcomes under)."""
    return f"{body.metadata.namespace}/{body.metadata.name}"


async def _run(kind: KindDef[Any], body: kopf.Body, memo: kopf.Memo, stopped: Any) -> None:
    runtime: Runtime = memo.runtime
    state = _state(memo)

    async def wake_on_stop() -> None:
        await stopped.wait()
        state.wake.set()

    def post(event: EventRecord) -> None:
        kopf.event(body, type=event.type, reason=event.reason, message=event.message)

    watcher = asyncio.create_task(wake_on_stop())
    try:
        await runtime.loops[kind.kind].run(
            body, state, should_stop=lambda: bool(stopped), post_event=post
        )
    finally:
        watcher.cancel()
        reason = stopped.reason
        if reason is not None and kopf.DaemonStoppingReason.RESOURCE_DELETED in reason:
            # The object is going: it must leave the per-resource gauges with it, or a
            # deleted resource counts as not Ready forever.
            runtime.metrics.forget(kind.kind, _key(body))


async def _finalize(kind: KindDef[Any], body: kopf.Body, memo: kopf.Memo) -> None:
    """Released (the loop's `on_gone` then drops the resource from the metrics), or
    retried by Kopf when the loop says when."""
    runtime: Runtime = memo.runtime
    not_yet = await runtime.loops[kind.kind].finalize(body, _state(memo))
    if not_yet is not None:
        raise kopf.TemporaryError(not_yet.message, delay=not_yet.retry_after) from not_yet.cause


Handler = Callable[..., Awaitable[None]]


@dataclass(frozen=True)
class KindHandlers:
    """The three handlers of one kind, before (or without) registration."""

    daemon: Handler
    changed: Handler
    deleted: Handler


def handlers_for(kind: KindDef[Any]) -> KindHandlers:
    async def daemon(body: kopf.Body, memo: kopf.Memo, stopped: Any, **_: Any) -> None:
        await _run(kind, body, memo, stopped)

    async def changed(body: kopf.Body, memo: kopf.Memo, **_: Any) -> None:
        _state(memo).poke_if_changed(body)

    async def deleted(body: kopf.Body, memo: kopf.Memo, **_: Any) -> None:
        await _finalize(kind, body, memo)

    return KindHandlers(daemon=daemon, changed=changed, deleted=deleted)


def register_handlers(
    kinds: KindRegistry = KINDS, registry: kopf.OperatorRegistry | None = None
) -> None:
    """Register every kind's handlers with Kopf (its default registry unless given).

    The ids are spelled as the decorated functions were named before ("listener_deleted"):
    Kopf keys a delete handler's retry progress by id in an annotation of the object, so
    an upgrade in the middle of a deletion picks up where the old operator left off.
    """
    for kind in kinds:
        fns = handlers_for(kind)
        resource = (GROUP, VERSION, kind.plural)
        kopf.daemon(
            *resource,
            id=f"{kind.singular}_daemon",
            cancellation_timeout=DAEMON_CANCELLATION_TIMEOUT,
            registry=registry,
        )(fns.daemon)
        kopf.on.event(*resource, id=f"{kind.singular}_changed", registry=registry)(fns.changed)
        kopf.on.delete(*resource, id=f"{kind.singular}_deleted", registry=registry)(fns.deleted)


register_handlers()
