"""Kopf handlers: thin. They turn bodies into calls on the reconciler and back.

Run with `deployplane operator run`, or `kopf run -m deployplane.controller.handlers`.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from functools import partial
from typing import Any

import kopf

from deployplane.api.client import ControlPlaneClient
from deployplane.controller.config import OperatorConfig
from deployplane.controller.kubeapi import KubernetesApi
from deployplane.controller.metrics import OperatorMetrics
from deployplane.controller.storage import NoDiffBaseStorage
from deployplane.crd.specs import GROUP, VERSION, AgentDeploymentSpec, ListenerSpec
from deployplane.crd.status import AgentDeploymentStatus, ListenerStatus
from deployplane.externals.agentdeployment import AgentDeploymentConnecter
from deployplane.externals.connections import Connection, Connections
from deployplane.externals.listener import ListenerConnecter
from deployplane.reconcile.loop import ResourceLoop, ResourceState
from deployplane.reconcile.outcome import EventRecord
from deployplane.reconcile.reconciler import Reconciler
from deployplane.reconcile.schedule import Schedule

FINALIZER = "deployplane.io/finalizer"


@dataclass
class Runtime:
    """Everything the handlers share, built once at startup and kept in the operator memo."""

    config: OperatorConfig
    kube: KubernetesApi
    connections: Connections
    metrics: OperatorMetrics
    agentdeployments: ResourceLoop[AgentDeploymentSpec, AgentDeploymentStatus]
    listeners: ResourceLoop[ListenerSpec, ListenerStatus]


def build_runtime(config: OperatorConfig, kube: KubernetesApi) -> Runtime:
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
    return Runtime(
        config=config,
        kube=kube,
        connections=connections,
        metrics=metrics,
        agentdeployments=ResourceLoop(
            Reconciler(
                AgentDeploymentConnecter(connections, kube), kind="deployment", schedule=schedule
            ),
            AgentDeploymentSpec,
            "agentdeployments",
            kube,
            on_outcome=partial(metrics.observe_outcome, "AgentDeployment"),
            status_model=AgentDeploymentStatus,
        ),
        listeners=ResourceLoop(
            Reconciler(ListenerConnecter(connections), kind="listener", schedule=schedule),
            ListenerSpec,
            "listeners",
            kube,
            on_outcome=partial(metrics.observe_outcome, "Listener"),
            status_model=ListenerStatus,
        ),
    )


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


async def _run(
    loop: ResourceLoop[Any, Any], body: kopf.Body, memo: kopf.Memo, stopped: Any
) -> None:
    state = _state(memo)

    async def wake_on_stop() -> None:
        await stopped.wait()
        state.wake.set()

    def post(event: EventRecord) -> None:
        kopf.event(body, type=event.type, reason=event.reason, message=event.message)

    watcher = asyncio.create_task(wake_on_stop())
    try:
        await loop.run(body, state, should_stop=lambda: bool(stopped), post_event=post)
    finally:
        watcher.cancel()


async def _finalize(
    loop: ResourceLoop[Any, Any], kind: str, body: kopf.Body, memo: kopf.Memo
) -> None:
    not_yet = await loop.finalize(body, _state(memo))
    if not_yet is not None:
        raise kopf.TemporaryError(not_yet.message, delay=not_yet.retry_after) from not_yet.cause


# ---------------------------------------------------------------- AgentDeployment


@kopf.daemon(GROUP, VERSION, "agentdeployments", cancellation_timeout=10.0)
async def agentdeployment_daemon(body: kopf.Body, memo: kopf.Memo, stopped: Any, **_: Any) -> None:
    await _run(memo.runtime.agentdeployments, body, memo, stopped)


@kopf.on.event(GROUP, VERSION, "agentdeployments")
async def agentdeployment_changed(body: kopf.Body, memo: kopf.Memo, **_: Any) -> None:
    _state(memo).poke_if_changed(body)


@kopf.on.delete(GROUP, VERSION, "agentdeployments")
async def agentdeployment_deleted(body: kopf.Body, memo: kopf.Memo, **_: Any) -> None:
    await _finalize(memo.runtime.agentdeployments, "AgentDeployment", body, memo)


# ----------------------------------------------------------------------- Listener


@kopf.daemon(GROUP, VERSION, "listeners", cancellation_timeout=10.0)
async def listener_daemon(body: kopf.Body, memo: kopf.Memo, stopped: Any, **_: Any) -> None:
    await _run(memo.runtime.listeners, body, memo, stopped)


@kopf.on.event(GROUP, VERSION, "listeners")
async def listener_changed(body: kopf.Body, memo: kopf.Memo, **_: Any) -> None:
    _state(memo).poke_if_changed(body)


@kopf.on.delete(GROUP, VERSION, "listeners")
async def listener_deleted(body: kopf.Body, memo: kopf.Memo, **_: Any) -> None:
    await _finalize(memo.runtime.listeners, "Listener", body, memo)
