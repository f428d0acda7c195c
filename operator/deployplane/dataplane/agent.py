"""The listener agent's loop: pull work, apply, watch, report. No local state.

Each round lists the workspace's deployments that the data plane has not reconciled
(the published `remote_reconciled=false`), keeps those whose `source_config.listener_id`
is this listener (the published list has no listener filter), and reconciles each
one, level-triggered, from what the control plane and the cluster say now. Every
`resync_interval` a round lists all deployments instead and removes the objects of
deployments that no longer exist (deleted while the agent was away). A heartbeat
task tells the control plane the agent is alive, so it hands over the deploy stages.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any
from uuid import UUID

from deployplane.api.dataplane import (
    ReportedDeploymentStatus,
    ReportedStatus,
    ReportLine,
    RevisionReport,
    RevisionWork,
)
from deployplane.api.errors import ControlPlaneError
from deployplane.api.models import Deployment, DeploymentStatus, Listener, Revision, RevisionStatus
from deployplane.dataplane.applier import (
    applied_revision,
    apply_rendered,
    database_password,
    find_owners,
    get_owner,
    owner_selector,
)
from deployplane.dataplane.kube import Cluster, ClusterError
from deployplane.dataplane.protocol import DataPlaneClient
from deployplane.dataplane.render import (
    LABEL_COMPONENT,
    LABEL_DEPLOYMENT_ID,
    SERVER,
    DataPlaneSettings,
    Rendered,
    RenderError,
    base_name,
    database_secret_name,
    namespace_for,
    render,
)
from deployplane.dataplane.rollout import (
    Verdict,
    database_ready,
    pod_states,
    rollout_verdict,
    route_waiting,
)
from deployplane.dataplane.vendorparts import refresh_route, route_of, unserved

__all__ = ["Agent", "AgentSettings"]

Obj = dict[str, Any]

log = logging.getLogger(__name__)

# The revision states the agent acts on; DEPLOYED only while the database is not ready.
_ACTIVE = frozenset(
    {RevisionStatus.AWAITING_DEPLOY, RevisionStatus.DEPLOYING, RevisionStatus.DEPLOYED}
)


@dataclass(frozen=True)
class AgentSettings:
    poll_interval: float = 2.0
    resync_interval: float = 600.0
    concurrency: int = 32
    progress_deadline_seconds: int = 600
    dataplane: DataPlaneSettings = field(default_factory=DataPlaneSettings)


class Agent:
    """One listener's agent; `run()` until cancelled."""

    def __init__(
        self,
        *,
        client: DataPlaneClient,
        cluster: Cluster,
        listener_id: UUID,
        settings: AgentSettings | None = None,
    ) -> None:
        self.client = client
        self.cluster = cluster
        self.listener_id = listener_id
        self.settings = settings or AgentSettings()
        self._limit = asyncio.Semaphore(self.settings.concurrency)

    # ------------------------------------------------------------------ the loops

    async def run(self) -> None:
        """Heartbeats and rounds until cancelled. The first round is a full one, so a
        restarted agent sweeps what was deleted while it was away."""
        ttl = (await self.client.heartbeat(self.listener_id)).ttl_seconds
        beating = asyncio.create_task(self._beat(ttl / 3), name="listener-heartbeat")
        try:
            last_full = -float("inf")
            while True:
                full = time.monotonic() - last_full >= self.settings.resync_interval
                try:
                    await self.round(full=full)
                    if full:
                        last_full = time.monotonic()
                except (ControlPlaneError, ClusterError) as exc:
                    log.warning("round failed, retrying: %s", exc)
                await asyncio.sleep(self.settings.poll_interval)
        finally:
            beating.cancel()

    async def _beat(self, every: float) -> None:
        while True:
            await asyncio.sleep(every)
            try:
                await self.client.heartbeat(self.listener_id)
            except ControlPlaneError as exc:  # the next beat may get through
                log.warning("heartbeat failed: %s", exc)

    async def round(self, *, full: bool = False) -> None:
        """One pass over the listener's deployments (all of them when `full`)."""
        listener = await self.client.get_listener(self.listener_id)
        mine = [
            deployment
            async for deployment in self.client.iter_deployments(
                # The published filter: what the data plane has not reconciled yet; a
                # full round lists everything, to find deletions made while away.
                remote_reconciled=None if full else False
            )
            if _listener_of(deployment) == self.listener_id
        ]
        await asyncio.gather(*(self._guarded(listener, d, full) for d in mine))
        if full:
            await self.sweep_orphans(listener, {str(d.id) for d in mine})

    async def _guarded(self, listener: Listener, deployment: Deployment, full: bool) -> None:
        """One deployment's failure is logged and retried next round, never fatal."""
        async with self._limit:
            try:
                await self.reconcile(listener, deployment, full=full)
            except (ControlPlaneError, ClusterError) as exc:
                log.warning("deployment %s: %s (retrying)", deployment.id, exc)
            except Exception:  # a bug must not stop the other deployments or the loop
                log.exception("deployment %s: unexpected error (retrying)", deployment.id)

    # ------------------------------------------------------------------ one deployment

    async def reconcile(
        self, listener: Listener, deployment: Deployment, *, full: bool = False
    ) -> None:
        if deployment.status is DeploymentStatus.AWAITING_DELETE:
            await self.remove(listener, deployment)
            return
        revision_id = deployment.latest_revision_id
        if revision_id is None or (
            revision_id == deployment.active_revision_id
            and deployment.status is DeploymentStatus.READY
        ):
            if full and revision_id is not None:
                await self.repair(listener, deployment, revision_id)
            return  # steady: nothing to write
        revision = await self.client.get_revision(deployment.id, revision_id)
        if revision.status not in _ACTIVE or (
            revision.status is RevisionStatus.DEPLOYED
            and deployment.status is not DeploymentStatus.AWAITING_DATABASE
        ):
            return
        work = await self.client.revision_work(self.listener_id, deployment.id, revision_id)
        if work.image_uri is None:
            return  # the build has not produced an image yet
        try:
            rendered = await self._render(deployment, revision, listener, work)
        except RenderError as exc:
            failed = Verdict(ReportedStatus.DEPLOY_FAILED, str(exc))
            await self._report(deployment, revision, failed)
            return
        if revision.status is not RevisionStatus.DEPLOYED:
            failure = await self._apply(rendered, str(revision_id))
            if failure is not None:
                await self._report(deployment, revision, failure)
                return
        verdict, db_status = await self._observe(rendered, revision)
        if verdict.status is ReportedStatus.DEPLOYED:
            # Before DEPLOYED, so whoever sees the deployment deployed sees its URL too.
            await self._report_url(deployment, rendered.url)
        await self._report(deployment, revision, verdict, db_status)

    async def _report_url(self, deployment: Deployment, url: str | None) -> None:
        """The route's URL as the deployment's `custom_url`, when it is not that yet."""
        config = deployment.source_config
        if url is not None and (config is None or config.custom_url != url):
            await self.client.report_url(self.listener_id, deployment.id, url)

    async def _render(
        self, deployment: Deployment, revision: Revision, listener: Listener, work: RevisionWork
    ) -> Rendered:
        assert work.image_uri is not None

        def with_password(password: str) -> Rendered:
            return render(
                deployment,
                revision,
                listener,
                work.image_uri or "",
                secret_values=work.secret_values,
                database_password=password,
                progress_deadline_seconds=self.settings.progress_deadline_seconds,
                settings=self.settings.dataplane,
            )

        namespace = namespace_for(deployment, listener)
        secret = database_secret_name(deployment)
        return with_password(await database_password(self.cluster, namespace, secret))

    async def _apply(self, rendered: Rendered, revision_id: str) -> Verdict | None:
        """Applies unless this revision already is (the owner's marker); a refusal no
        retry can fix (an invalid object, a denied namespace) is the rollout's failure."""
        owner = await get_owner(self.cluster, rendered)
        if applied_revision(owner) == revision_id:
            return None
        missing = await unserved(self.cluster, rendered)
        if missing is not None:
            return Verdict(ReportedStatus.DEPLOY_FAILED, missing)
        try:
            await apply_rendered(self.cluster, rendered, owner)
        except ClusterError as exc:
            if exc.retryable:
                raise
            return Verdict(ReportedStatus.DEPLOY_FAILED, f"the cluster refused the objects: {exc}")
        return None

    async def _observe(
        self, rendered: Rendered, revision: Revision
    ) -> tuple[Verdict, ReportedDeploymentStatus]:
        server = _find(rendered.objects, "Deployment", SERVER)
        database = _find(rendered.objects, "StatefulSet", None)
        route = route_of(rendered.objects)
        current, pods, statefulset, applied_route = await asyncio.gather(
            self._read(server, "apps/v1", "Deployment"),
            self._server_pods(rendered.namespace, server),
            self._read(database, "apps/v1", "StatefulSet"),
            self._read(route, *_type_of(route)),
        )
        ready = database is None or database_ready(statefulset)
        db_status = (
            ReportedDeploymentStatus.READY if ready else ReportedDeploymentStatus.AWAITING_DATABASE
        )
        verdict = rollout_verdict(current, pods, str(revision.id))
        if verdict.status is ReportedStatus.DEPLOYED and route is not None:
            waiting = route_waiting(applied_route)
            if waiting is not None:
                verdict = Verdict(ReportedStatus.DEPLOYING, waiting)
        return replace(verdict, lines=tuple(pod_states(pods))), db_status

    async def _read(self, rendered: Obj | None, api_version: str, kind: str) -> Obj | None:
        """The cluster's copy of a rendered object (None: not rendered, or absent)."""
        if rendered is None:
            return None
        meta = rendered["metadata"]
        return await self.cluster.get(api_version, kind, meta["namespace"], meta["name"])

    async def _server_pods(self, namespace: str, server: Obj | None) -> list[Obj]:
        if server is None:
            return []
        selector = {
            LABEL_DEPLOYMENT_ID: server["metadata"]["labels"][LABEL_DEPLOYMENT_ID],
            LABEL_COMPONENT: SERVER,
        }
        return await self.cluster.list("v1", "Pod", namespace, selector)

    async def _report(
        self,
        deployment: Deployment,
        revision: Revision,
        verdict: Verdict,
        db_status: ReportedDeploymentStatus | None = None,
    ) -> None:
        """Reports only a change: a repeated status says nothing new."""
        deployment_status = db_status if verdict.status is ReportedStatus.DEPLOYED else None
        unchanged = verdict.status.value == revision.status.value and (
            deployment_status is None or deployment_status.value == deployment.status.value
        )
        if unchanged:
            return
        failed = verdict.status is ReportedStatus.DEPLOY_FAILED
        said = f"rollout {verdict.status.value}" + (
            f": {verdict.message}" if verdict.message else ""
        )
        report = RevisionReport(
            status=verdict.status,
            message=verdict.message if failed else None,
            deployment_status=deployment_status,
            log_lines=[
                ReportLine(level="ERROR" if failed else "INFO", message=said[:2000]),
                *(ReportLine(message=line[:2000]) for line in verdict.lines[:49]),
            ],
        )
        accepted = await self.client.report(self.listener_id, deployment.id, revision.id, report)
        if not accepted:
            log.info("revision %s was superseded; the newer one is next", revision.id)

    async def repair(self, listener: Listener, deployment: Deployment, revision_id: UUID) -> None:
        """On a full round, a deployed revision whose objects are not (all) in the cluster
        is applied again: objects deleted by hand, or a revision the emulator deployed on
        its timers while this agent was away. One read when all is well."""
        try:
            namespace = namespace_for(deployment, listener)
        except RenderError:
            return
        owner = await self.cluster.get("v1", "ConfigMap", namespace, base_name(deployment))
        if owner is not None and applied_revision(owner) == str(revision_id):
            await self.repair_route(listener, deployment, owner)
            return
        revision = await self.client.get_revision(deployment.id, revision_id)
        work = await self.client.revision_work(self.listener_id, deployment.id, revision_id)
        if work.image_uri is None:
            return
        rendered = await self._render(deployment, revision, listener, work)
        await apply_rendered(self.cluster, rendered, owner)
        log.info("deployment %s: applied its deployed revision again", deployment.id)

    async def repair_route(self, listener: Listener, deployment: Deployment, owner: Obj) -> None:
        """The route brought up to the current settings, and its URL reported."""
        url = await refresh_route(
            self.cluster, deployment, listener, self.settings.dataplane, owner
        )
        await self._report_url(deployment, url)

    # ------------------------------------------------------------------ removal

    async def remove(self, listener: Listener, deployment: Deployment) -> None:
        """Deletes the owner (the garbage collector removes the rest, foreground, so the
        owner goes last) and says so once nothing is left."""
        selector = owner_selector(
            listener_id=str(self.listener_id), deployment_id=str(deployment.id)
        )
        owners = await find_owners(self.cluster, _namespaces(listener), selector)
        for owner in owners:
            if not owner["metadata"].get("deletionTimestamp"):
                meta = owner["metadata"]
                await self.cluster.delete("v1", "ConfigMap", meta["namespace"], meta["name"])
        if not owners:
            await self.client.deletion_done(self.listener_id, deployment.id)

    async def sweep_orphans(self, listener: Listener, known: set[str]) -> None:
        """Removes the objects of this listener's deployments that no longer exist."""
        selector = owner_selector(listener_id=str(self.listener_id))
        for owner in await find_owners(self.cluster, _namespaces(listener), selector):
            meta = owner["metadata"]
            if meta["labels"].get(LABEL_DEPLOYMENT_ID) in known or meta.get("deletionTimestamp"):
                continue
            log.info("removing the objects of deleted deployment %s", meta["labels"])
            await self.cluster.delete("v1", "ConfigMap", meta["namespace"], meta["name"])


def _listener_of(deployment: Deployment) -> UUID | None:
    config = deployment.source_config
    return config.listener_id if config is not None else None


def _namespaces(listener: Listener) -> list[str]:
    config = listener.compute_config
    return list((config.k8s_namespaces if config is not None else None) or [])


def _type_of(obj: Obj | None) -> tuple[str, str]:
    return ("", "") if obj is None else (obj["apiVersion"], obj["kind"])


def _find(objects: Sequence[Obj], kind: str, component: str | None) -> Obj | None:
    for obj in objects:
        labels = obj["metadata"].get("labels") or {}
        if obj["kind"] == kind and (component is None or labels.get(LABEL_COMPONENT) == component):
            return obj
    return None
