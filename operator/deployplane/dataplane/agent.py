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
from dataclasses import dataclass, field, replace
from typing import Any
from uuid import UUID

from deployplane.api.dataplane import (
    ReportedDeploymentStatus,
    ReportedStatus,
    ReportLine,
    RevisionReport,
    RevisionWork,
    ServerRuntime,
)
from deployplane.api.errors import ControlPlaneError
from deployplane.api.models import Deployment, DeploymentStatus, Listener, Revision
from deployplane.dataplane import removal
from deployplane.dataplane.applier import (
    applied_revision,
    apply_rendered,
    changed_since,
    database_password,
    get_owner,
    is_applied,
)
from deployplane.dataplane.events import post_warnings
from deployplane.dataplane.kube import Cluster, ClusterError
from deployplane.dataplane.observe import observe_rollout
from deployplane.dataplane.protocol import DataPlaneClient
from deployplane.dataplane.render import (
    DataPlaneSettings,
    Rendered,
    RenderError,
    base_name,
    database_secret_name,
    namespace_for,
    render,
)
from deployplane.dataplane.rollout import Verdict
from deployplane.dataplane.vendorparts import refresh_route, unserved
from deployplane.dataplane.work import (
    acts_on,
    listener_of,
    rendered_inputs,
    settled,
)

__all__ = ["Agent", "AgentSettings"]

Obj = dict[str, Any]

log = logging.getLogger(__name__)


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
        builtin: Listener | None = None,
    ) -> None:
        """`builtin`: the listener this agent stands for when the control plane lists
        none (the emulator's built-in data plane, docs/emulator.md): the deployments
        with no listener are then this agent's, in the namespaces `builtin` names."""
        self.client = client
        self.cluster = cluster
        self.listener_id = listener_id
        self.settings = settings or AgentSettings()
        self.builtin = builtin
        self._limit = asyncio.Semaphore(self.settings.concurrency)
        self._beating: asyncio.Task[None] | None = None
        # The settled deployments whose render this process compared with the applied
        # one: the render changes only with the agent's code or settings, so once each.
        self._render_checked: set[UUID] = set()

    def stalled(self) -> list[str]:
        """What has stopped moving the work while `run()` goes on (the liveness probe's
        question, `deployplane.dataplane.probes`): the heartbeat task, which tells the
        control plane to hand this agent the deploy stages, ended on an error it does
        not expect."""
        beating = self._beating
        if beating is None or not beating.done() or beating.cancelled():
            return []
        return [f"the heartbeat ended: {beating.exception()!r}"]

    # ------------------------------------------------------------------ the loops

    async def run(self) -> None:
        """Heartbeats and rounds until cancelled. The first round is a full one, so a
        restarted agent sweeps what was deleted while it was away."""
        ttl = (await self.client.heartbeat(self.listener_id)).ttl_seconds
        self._beating = beating = asyncio.create_task(
            self._beat(ttl / 3), name="listener-heartbeat"
        )
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
        listener = self.builtin or await self.client.get_listener(self.listener_id)
        # The published filter: what the data plane has not reconciled yet; a full round
        # lists everything, to find deletions made while away (and asks which are not).
        mine = await self._mine(remote_reconciled=None if full else False)
        pending = {d.id for d in await self._mine(remote_reconciled=False)} if full else None
        await asyncio.gather(
            *(self._guarded(listener, d, full, pending is None or d.id in pending) for d in mine)
        )
        if full:
            await removal.sweep_orphans(
                self.cluster, self.listener_id, listener, {str(d.id) for d in mine}
            )

    async def _mine(self, *, remote_reconciled: bool | None) -> list[Deployment]:
        """The workspace's deployments (every page) that run on this listener (the
        published list has no listener filter)."""
        return [
            deployment
            async for deployment in self.client.iter_deployments(
                remote_reconciled=remote_reconciled
            )
            if listener_of(deployment) == (None if self.builtin else self.listener_id)
        ]

    async def _guarded(
        self, listener: Listener, deployment: Deployment, full: bool, pending: bool
    ) -> None:
        """One deployment's failure is logged and retried next round, never fatal."""
        async with self._limit:
            try:
                await self.reconcile(listener, deployment, full=full, pending=pending)
            except (ControlPlaneError, ClusterError) as exc:
                log.warning("deployment %s: %s (retrying)", deployment.id, exc)
            except Exception:  # a bug must not stop the other deployments or the loop
                log.exception("deployment %s: unexpected error (retrying)", deployment.id)

    # ------------------------------------------------------------------ one deployment

    async def reconcile(
        self,
        listener: Listener,
        deployment: Deployment,
        *,
        full: bool = False,
        pending: bool = True,
    ) -> None:
        """`pending`: the control plane lists the deployment as not `remote_reconciled`.
        A settled deployment that is pending had a change that made no revision (its
        resources, say): its revision is rendered again, applied if what it renders
        changed, and reported DEPLOYED once rolled out, which reconciles it again."""
        if deployment.status is DeploymentStatus.AWAITING_DELETE:
            await removal.remove(self.cluster, self.client, self.listener_id, listener, deployment)
            return
        revision_id = deployment.latest_revision_id
        steady = revision_id is not None and settled(deployment)
        if revision_id is None or (steady and not pending):
            if full and revision_id is not None:
                await self.repair(listener, deployment, revision_id)
            return  # steady: nothing to write
        revision = await self.client.get_revision(deployment.id, revision_id)
        if not acts_on(revision, deployment, rerender=steady):
            return
        work = await self.client.revision_work(self.listener_id, deployment.id, revision_id)
        if work.image_uri is None:
            return  # the build has not produced an image yet
        try:
            rendered = await self._render(deployment, revision, listener, work)
            failure = await self._apply(rendered)
        except RenderError as exc:
            failure = Verdict(ReportedStatus.DEPLOY_FAILED, str(exc))
        if failure is not None:
            await self._failed(deployment, revision, failure, rerender=steady)
            return
        verdict, db_status = await observe_rollout(self.cluster, rendered, str(revision.id))
        if verdict.status is not ReportedStatus.DEPLOYING:
            # Once per revision: with the report that ends its rollout.
            said = tuple(w.message for w in rendered.warnings)
            verdict = replace(verdict, warnings=(*said, *verdict.warnings))
        if verdict.status is ReportedStatus.DEPLOYED:
            # Before DEPLOYED, so whoever sees the deployment deployed sees its URL too.
            await self._report_url(deployment, rendered.url)
        if steady:
            await self._report_rerender(deployment, revision, verdict, db_status)
        else:
            await self._report(deployment, revision, verdict, db_status)

    async def _failed(
        self, deployment: Deployment, revision: Revision, failure: Verdict, *, rerender: bool
    ) -> None:
        """A rollout that cannot succeed fails its revision; a re-render's revision is
        DEPLOYED and stays so (what ran keeps running), so its failure is logged and the
        deployment stays not reconciled, tried again each round."""
        if not rerender:
            await self._report(deployment, revision, failure)
            return
        log.warning("deployment %s: its change fails: %s", deployment.id, failure.message)

    async def _report_rerender(
        self,
        deployment: Deployment,
        revision: Revision,
        verdict: Verdict,
        db_status: ReportedDeploymentStatus,
    ) -> None:
        """A re-render rolled out: DEPLOYED again, which makes it `remote_reconciled`;
        nothing while the rollout of the change goes on."""
        if verdict.status is not ReportedStatus.DEPLOYED:
            if verdict.status is ReportedStatus.DEPLOY_FAILED:
                await self._failed(deployment, revision, verdict, rerender=True)
            return
        await self._report(deployment, revision, verdict, db_status, rerender=True)

    async def _changed_meanwhile(self, deployment: Deployment) -> bool:
        """Whether the deployment changed what a render reads since it was listed: a
        DEPLOYED report would then say a render that is not the current one is rolled
        out (and reconcile it), a DEPLOY_FAILED one would fail the revision for a render
        the change may fix (and the change, made while the revision was on its way,
        would never run); the next round renders the change instead."""
        fresh = await self.client.get_deployment(deployment.id)
        return rendered_inputs(fresh) != rendered_inputs(deployment)

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
                runtime=work.runtime,
            )

        if work.runtime is ServerRuntime.INMEM:
            return with_password("")  # no PostgreSQL, so no password to keep
        namespace = namespace_for(deployment, listener)
        secret = database_secret_name(deployment)
        return with_password(await database_password(self.cluster, namespace, secret))

    async def _apply(self, rendered: Rendered) -> Verdict | None:
        """Applies unless the owner says this render is there whole (its revision marker
        and render digest); a refusal no retry can fix (an invalid object, a denied
        namespace) is the rollout's failure."""
        owner = await get_owner(self.cluster, rendered)
        if is_applied(owner, rendered):
            return None  # this revision, rendered as now: nothing to write
        missing = await unserved(self.cluster, rendered)
        if missing is not None:
            return Verdict(ReportedStatus.DEPLOY_FAILED, missing)
        try:
            applied = await apply_rendered(self.cluster, rendered, owner)
        except ClusterError as exc:
            if exc.retryable:
                raise
            return Verdict(ReportedStatus.DEPLOY_FAILED, f"the cluster refused the objects: {exc}")
        await post_warnings(self.cluster, rendered, applied)
        return None

    async def _report(
        self,
        deployment: Deployment,
        revision: Revision,
        verdict: Verdict,
        db_status: ReportedDeploymentStatus | None = None,
        *,
        rerender: bool = False,
    ) -> None:
        """Reports only a change: a repeated status says nothing new (but for the
        re-render of a change, whose DEPLOYED makes the deployment reconciled again)."""
        deployment_status = db_status if verdict.status is ReportedStatus.DEPLOYED else None
        unchanged = verdict.status.value == revision.status.value and (
            deployment_status is None or deployment_status.value == deployment.status.value
        )
        if unchanged and not rerender:
            return
        final = verdict.status is not ReportedStatus.DEPLOYING
        if final and await self._changed_meanwhile(deployment):
            return
        failed = verdict.status is ReportedStatus.DEPLOY_FAILED
        warnings = verdict.warnings[:10]
        said = (
            ("change applied: " if rerender else "")
            + f"rollout {verdict.status.value}"
            + (f": {verdict.message}" if verdict.message else "")
        )
        report = RevisionReport(
            status=verdict.status,
            message=verdict.message if failed else None,
            deployment_status=deployment_status,
            log_lines=[
                ReportLine(level="ERROR" if failed else "INFO", message=said[:2000]),
                *(ReportLine(level="WARNING", message=w[:2000]) for w in warnings),
                *(ReportLine(message=line[:2000]) for line in verdict.lines[: 49 - len(warnings)]),
            ],
        )
        accepted = await self.client.report(self.listener_id, deployment.id, revision.id, report)
        if not accepted:
            log.info("revision %s was superseded; the newer one is next", revision.id)

    async def repair(self, listener: Listener, deployment: Deployment, revision_id: UUID) -> None:
        """On a full round, a deployed revision whose objects are not (all) in the cluster
        is applied again: objects deleted by hand, or a revision the emulator deployed on
        its timers while this agent was away. Once per deployment in this process, it is
        also rendered, and the objects whose render differs from the owner's record are
        applied: an upgraded agent (or changed settings) brings its render to what runs,
        as the workloads' rollout strategies allow. No report: the revision stays
        DEPLOYED, the control plane is not written. One read when all is well."""
        try:
            namespace = namespace_for(deployment, listener)
        except RenderError:
            return
        owner = await self.cluster.get("v1", "ConfigMap", namespace, base_name(deployment))
        current = applied_revision(owner) == str(revision_id)  # False without an owner
        if owner is not None and current and deployment.id in self._render_checked:
            await self.repair_route(listener, deployment, owner)
            return
        revision = await self.client.get_revision(deployment.id, revision_id)
        work = await self.client.revision_work(self.listener_id, deployment.id, revision_id)
        if work.image_uri is None:
            return
        rendered = await self._render(deployment, revision, listener, work)
        self._render_checked.add(deployment.id)
        if owner is not None and current and is_applied(owner, rendered):
            await self.repair_route(listener, deployment, owner)
            return
        # Its objects missing: all of them; a render that changed: where it changed.
        only = changed_since(owner, rendered) if owner is not None and current else None
        await apply_rendered(self.cluster, rendered, owner, only=only)
        await self._report_url(deployment, rendered.url)
        what = "all" if only is None else ", ".join(sorted(only))
        log.info("deployment %s: its deployed revision applied again: %s", deployment.id, what)

    async def repair_route(self, listener: Listener, deployment: Deployment, owner: Obj) -> None:
        """The route brought up to the current settings, and its URL reported."""
        url = await refresh_route(
            self.cluster, deployment, listener, self.settings.dataplane, owner
        )
        await self._report_url(deployment, url)
