"""The revision pipeline: moves revisions through the spec's states on a timer.

All its state is in the database (`revisions.next_step_at`, `deployments.delete_at`,
epoch seconds), so a restarted emulator carries on where it stopped. The worker is an
asyncio task in the app's lifespan; it sleeps until the next due step or until a
write wakes it (`Pipeline.notify`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from sqlalchemy import bindparam, case, func, insert, select, update

from deployplane.api.models import DeploymentStatus, RevisionStatus, Source
from deployplane.emulator.revisions.stages import (
    ImageBuilds,
    builds_image,
    entered,
    hold_for_builder,
)
from deployplane.emulator.rules.rollout import image_version, reconciled_on_reaching
from deployplane.emulator.settings import PipelineConfig
from deployplane.emulator.store.agents import AGENT_TTL_SECONDS, live_listeners, runner_of
from deployplane.emulator.store.db import Database, DbConn
from deployplane.emulator.store.deletion import remove_deployments
from deployplane.emulator.store.tables import dataplane_revisions, deployments, revisions, utcnow

__all__ = ["BATCH", "Pipeline", "next_status", "path_of"]

log = logging.getLogger(__name__)


BATCH = 50  # per round, a transaction that holds the loop on SQLite (500: POST p99 x4)
# How long `Pipeline.stop` lets a round in progress finish before cancelling it.
_STOP_GRACE_SECONDS = 5.0

# A deployment whose revision deployed: READY, unless it is being deleted.
_DEPLOYED = (
    update(deployments)
    .where(deployments.c.id == bindparam("deployment_id"))
    .values(
        active_revision_id=bindparam("active_revision_id"),
        image_version=bindparam("image_version"),
        updated_at=bindparam("updated_at"),
        status=case(
            (
                deployments.c.status == DeploymentStatus.AWAITING_DELETE.value,
                deployments.c.status,
            ),
            else_=DeploymentStatus.READY.value,
        ),
    )
)

_MOVE_REVISIONS = (
    update(revisions)
    .where(revisions.c.id.in_(bindparam("ids", expanding=True)))
    .values(
        status=bindparam("status"),
        updated_at=bindparam("updated_at"),
        next_step_at=bindparam("next_step_at"),
        remote_reconciled=bindparam("remote_reconciled"),
    )
)


_GIT_PATH = (
    RevisionStatus.CREATING,
    RevisionStatus.QUEUED,
    RevisionStatus.AWAITING_BUILD,
    RevisionStatus.BUILDING,
    RevisionStatus.AWAITING_DEPLOY,
    RevisionStatus.DEPLOYING,
    RevisionStatus.DEPLOYED,
)
# An image is already built: external_docker skips the build states.
_IMAGE_PATH = (
    RevisionStatus.CREATING,
    RevisionStatus.QUEUED,
    RevisionStatus.AWAITING_DEPLOY,
    RevisionStatus.DEPLOYING,
    RevisionStatus.DEPLOYED,
)
# The state a configured failure stops in, by the state it leaves.
_FAILS_LEAVING = {
    RevisionStatus.CREATE_FAILED: RevisionStatus.CREATING,
    RevisionStatus.DEPLOY_FAILED: RevisionStatus.DEPLOYING,
}


# The sources the service builds: from a repository, or from an uploaded tarball.
_BUILT = (Source.GIT_HOST, Source.INTERNAL_SOURCE)


def path_of(source: Source) -> tuple[RevisionStatus, ...]:
    return _GIT_PATH if source in _BUILT else _IMAGE_PATH


def next_status(
    source: Source,
    status: RevisionStatus,
    failure: RevisionStatus | None,
    build_error: str | None = None,
) -> RevisionStatus:
    """The state after `status`, or `failure` when this is the step where it fails.

    BUILD_FAILED fails the build: built revisions while BUILDING (also when their real
    build failed: `build_error`), image revisions (which have no build) when leaving
    QUEUED.
    """
    path = path_of(source)
    if status not in path or status is RevisionStatus.DEPLOYED:
        return status
    if build_error is not None and status is RevisionStatus.BUILDING:
        return RevisionStatus.BUILD_FAILED
    if failure is not None:
        if failure is RevisionStatus.BUILD_FAILED:
            leaving = RevisionStatus.BUILDING if source in _BUILT else RevisionStatus.QUEUED
        else:
            leaving = _FAILS_LEAVING[failure]
        if status is leaving:
            return failure
    return path[path.index(status) + 1]


class Pipeline:
    """The background worker. `notify()` after any write that schedules work."""

    def __init__(
        self, *, db: Database, config: PipelineConfig, builder: ImageBuilds | None = None
    ) -> None:
        self._db = db
        self._config = config
        # The remote builds of uploads as real images (else checked only: `tarballcheck`).
        self._builder = builder
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._stopping = False
        self._planned_wake: float | None = None  # epoch seconds; None = idle
        # Rounds are at least a fraction of a step apart, so revisions due at nearby
        # times move together in one round; step 0 means no waiting at all.
        self._tick = min(0.05, config.step_seconds / 10)

    @property
    def step_seconds(self) -> float:
        return self._config.step_seconds

    def notify(self, due: float | None = None) -> None:
        """Tells the worker that work is due at `due` (epoch seconds; None = now).

        The worker is only woken when that is earlier than its planned wake-up: under
        a stream of creates it would otherwise run a database round per request.
        """
        planned = self._planned_wake
        if due is None or planned is None or due < planned:
            self._wake.set()

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="deployplane-pipeline")
        if self._builder is not None:
            self._builder.start()

    async def stop(self) -> None:
        """Ends the worker: it finishes its round and leaves, or is cancelled.

        Asked first rather than cancelled: a cancellation can be lost (a database
        driver may absorb it mid-statement, and in Python 3.11 `asyncio.wait_for`
        swallows one that lands as its wait completes), after which the worker would
        sleep until its next due step, up to a whole step away, and hang the shutdown.
        Asking also spares PostgreSQL a transaction cut off mid-round.
        """
        if self._builder is not None:
            await self._builder.stop()
        task, self._task = self._task, None
        if task is None:
            return
        self._stopping = True
        self._wake.set()
        done, _ = await asyncio.wait({task}, timeout=_STOP_GRACE_SECONDS)
        if not done:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def _run(self) -> None:
        while not self._stopping:
            self._wake.clear()
            try:
                await self.advance_due(now=time.time())
                due = await self._next_due()
            except Exception:  # keep the worker alive; the next round retries
                log.exception("pipeline step failed")
                due = time.time() + 1.0
            self._planned_wake = due
            timeout = None if due is None else max(0.0, due - time.time(), self._tick)
            if timeout == 0.0:
                await asyncio.sleep(0)  # let requests in between rounds
                continue
            # asyncio.timeout, not wait_for: no task per wait, and no lost cancellation.
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(timeout):
                    await self._wake.wait()
            self._planned_wake = None

    async def _next_due(self) -> float | None:
        async with self._db.read() as conn:
            rev_due = (await conn.execute(select(func.min(revisions.c.next_step_at)))).scalar()
            del_due = (await conn.execute(select(func.min(deployments.c.delete_at)))).scalar()
        dues = [d for d in (rev_due, del_due) if d is not None]
        return min(dues) if dues else None

    async def advance_due(self, *, now: float) -> int:
        """Moves every due revision one state on and removes due deletions.

        On PostgreSQL requests write while a round runs (SQLite serialises them, and
        ignores FOR UPDATE). The round locks the rows it reads, revision and deployment
        together, so a PATCH cannot supersede a revision between its read and its move
        (the move would revive it); and it skips rows a request holds rather than wait,
        so it never joins a lock cycle with one (requests lock the deployment, then its
        revisions). Another emulator's worker on the same database skips them too.
        """
        stamp = utcnow()
        building: list[Any] = []  # handed to the image builder once this round commits
        async with self._db.write() as conn:
            due = await _hand_off(conn, await _due_revisions(conn, now), now)
            # One UPDATE per target state, not per revision: under a stream of creates
            # the worker moves hundreds of revisions a second.
            moves: dict[RevisionStatus, list[Any]] = defaultdict(list)
            for row in due:
                source = Source(row.source)
                failure = self._config.failure_for(
                    name=row.name, image_uri=row.image_uri, repo_ref=row.repo_ref, seq=row.seq
                )
                new = next_status(source, RevisionStatus(row.status), failure, row.build_error)
                moves[new].append(row.id)
                await entered(conn, row, source, new, checks_only=self._builder is None)
                if self._builder is not None and builds_image(source, new):
                    building.append(row.id)
                if new is RevisionStatus.DEPLOYED:
                    await self._deployed(conn, row, source, stamp)
            moved = await self._move(conn, moves, now=now, stamp=stamp)
            await hold_for_builder(conn, building)
            gone = await _due_deletions(conn, now)
            await remove_deployments(conn, gone)
        for revision_id in building:
            self._builder.submit(revision_id)  # type: ignore[union-attr]
        return moved + len(gone)

    async def _move(
        self, conn: DbConn, moves: dict[RevisionStatus, list[Any]], *, now: float, stamp: Any
    ) -> int:
        """Moves each group of revisions to its new state; returns how many moved."""
        for new, ids in moves.items():
            await conn.execute(
                _MOVE_REVISIONS,
                {
                    "ids": ids,
                    "status": new.value,
                    "updated_at": stamp,
                    "next_step_at": None if new.is_terminal else now + self._config.seconds_in(new),
                    "remote_reconciled": reconciled_on_reaching(new),
                },
            )
        return sum(len(ids) for ids in moves.values())

    @staticmethod
    async def _deployed(conn: DbConn, row: Any, source: Source, stamp: Any) -> None:
        await conn.execute(
            _DEPLOYED,
            {
                "deployment_id": row.deployment_id,
                "active_revision_id": row.id,
                "image_version": image_version(source, row.image_uri, row.repo_commit_sha),
                "updated_at": stamp,
            },
        )


async def _due_revisions(conn: DbConn, now: float) -> Sequence[Any]:
    """The revisions due to move on, oldest due first, with what deciding their next
    state needs; locked, skipping rows a request holds (see `Pipeline.advance_due`)."""
    return (
        await conn.execute(
            select(
                revisions.c.id,
                revisions.c.seq,
                revisions.c.deployment_id,
                revisions.c.source,
                revisions.c.status,
                revisions.c.image_uri,
                revisions.c.repo_ref,
                revisions.c.repo_commit_sha,
                revisions.c.source_tarball_path,
                revisions.c.langgraph_config_path,
                revisions.c.build_error,
                deployments.c.name,
                deployments.c.source_config,
                deployments.c.workspace_id,
            )
            .join(deployments, deployments.c.id == revisions.c.deployment_id)
            .where(revisions.c.next_step_at <= now)
            .order_by(revisions.c.next_step_at)
            .limit(BATCH)
            .with_for_update(of=(revisions, deployments), skip_locked=True)
        )
    ).all()


_DEPLOYED_VALUE = RevisionStatus.DEPLOYED.value  # its re-render goes to a live agent too
_HANDED_OFF = (RevisionStatus.AWAITING_DEPLOY.value, _DEPLOYED_VALUE)


async def _hand_off(conn: DbConn, due: Sequence[Any], now: float) -> list[Any]:
    """Gives the revisions about to deploy on a listener with a live agent to that agent
    (docs/dataplane.md), and the re-render of a deployed one (`store.deploymentpatch`, which has its
    row already): they leave the timers and wait for the agent's reports. Returns the rows
    the timers still move (a DEPLOYED one: the simulated re-render)."""
    waiting = [(row, runner_of(row)) for row in due if row.status in _HANDED_OFF]
    live = await live_listeners(conn, (lid for _, lid in waiting), now)
    handed = {row.id: lid for row, lid in waiting if lid in live}
    if not handed:
        return list(due)
    await conn.execute(
        update(revisions).where(revisions.c.id.in_(list(handed))).values(next_step_at=None)
    )
    for row in due:
        if (lid := handed.get(row.id)) is not None and row.status != _DEPLOYED_VALUE:
            await conn.execute(
                insert(dataplane_revisions).values(
                    revision_id=row.id, deployment_id=row.deployment_id, listener_id=lid
                )
            )
    return [row for row in due if row.id not in handed]


async def _due_deletions(conn: DbConn, now: float) -> list[Any]:
    """The deployments to remove now. One on a listener with a live agent waits for the
    agent's "deleted" call instead, re-checked every agent TTL: if the agent goes quiet
    the record goes, and the agent's orphan sweep cleans the cluster when it is back."""
    rows = (
        await conn.execute(
            select(deployments.c.id, deployments.c.source_config, deployments.c.workspace_id)
            .where(deployments.c.delete_at <= now)
            .with_for_update(skip_locked=True)
        )
    ).all()
    on_listener = {row.id: runner_of(row) for row in rows}
    live = await live_listeners(conn, on_listener.values(), now)
    waiting = [did for did, lid in on_listener.items() if lid in live]
    if waiting:
        await conn.execute(
            update(deployments)
            .where(deployments.c.id.in_(waiting))
            .values(delete_at=now + AGENT_TTL_SECONDS)
        )
    return [did for did, lid in on_listener.items() if lid not in live]
