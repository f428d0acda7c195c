"""The emulator's image builder: the remote builds of internal_source revisions, one at
a time, in a worker thread, their log lines written as they come (`langgraph deploy`
and `deployplane deployments logs --type build` read them while the build runs).

The pipeline hands a revision over as it enters BUILDING (and leaves it there, off its
timers: `next_step_at` null); the verdict lands on the revision (`image_uri`, or
`build_error`) with `next_step_at` now, and the pipeline moves it on (BUILD_FAILED, or
AWAITING_DEPLOY). At start-up the builder takes back the revisions a stopped emulator
left building.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from collections.abc import Callable
from typing import Any

from sqlalchemy import select, update

from deployplane.api.models import RevisionStatus, Source
from deployplane.emulator.builds.imagebuild.runner import BuildFailed, build_image
from deployplane.emulator.settings import ImageBuildConfig
from deployplane.emulator.store.artifacts import upload_data
from deployplane.emulator.store.db import Database
from deployplane.emulator.store.logs import LogKind, write_lines
from deployplane.emulator.store.tables import deployments, revisions

__all__ = ["ImageBuilder"]

log = logging.getLogger(__name__)
_FLUSH_SECONDS = 0.5  # how often the lines of a running build are written


class ImageBuilder:
    """Builds the revisions `submit` hands it; `on_verdict()` after each verdict."""

    def __init__(
        self, *, db: Database, settings: ImageBuildConfig, on_verdict: Callable[[], None]
    ) -> None:
        self._db = db
        self._settings = settings
        self._on_verdict = on_verdict
        self._queue: asyncio.Queue[uuid.UUID] = asyncio.Queue()
        self._task: asyncio.Task[None] | None = None

    def submit(self, revision_id: uuid.UUID) -> None:
        self._queue.put_nowait(revision_id)

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="deployplane-image-builder")

    async def stop(self) -> None:
        """Stops taking builds (one in its thread finishes; its revision is taken back
        at the next start, as its verdict was never written)."""
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def _run(self) -> None:
        async with self._db.read() as conn:
            left = await conn.execute(
                select(revisions.c.id).where(
                    revisions.c.status == RevisionStatus.BUILDING.value,
                    revisions.c.source == Source.INTERNAL_SOURCE.value,
                    revisions.c.next_step_at.is_(None),
                    revisions.c.image_uri.is_(None),
                    revisions.c.build_error.is_(None),
                )
            )
            for (revision_id,) in left.all():
                self.submit(revision_id)
        while True:
            revision_id = await self._queue.get()
            try:
                await self._build(revision_id)
            except Exception:  # keep the builder alive; the revision is taken back at start
                log.exception("image build of revision %s failed", revision_id)

    async def _build(self, revision_id: uuid.UUID) -> None:
        async with self._db.read() as conn:
            row = (
                await conn.execute(
                    select(
                        revisions.c.deployment_id,
                        revisions.c.source_tarball_path,
                        revisions.c.langgraph_config_path,
                        deployments.c.name,
                    )
                    .join(deployments, deployments.c.id == revisions.c.deployment_id)
                    .where(revisions.c.id == revision_id)
                )
            ).first()
            if row is None:
                return
            path = row.source_tarball_path
            loaded = await upload_data(conn, path) if path else None
        lines = _Lines(self._db, row.deployment_id, revision_id)
        image, error = None, None
        if loaded is None:
            error = "the uploaded source tarball is gone"
        else:
            image, error = await lines.during(self._thread_build, loaded, row, revision_id)
        if error is not None:
            lines.emit("ERROR", f"Build failed: {error}")
        await lines.flush()
        await self._verdict(revision_id, image, error)

    def _thread_build(
        self,
        loaded: tuple[bytes, str],
        row: Any,
        revision_id: uuid.UUID,
        emit: Callable[[str, str], None],
    ) -> tuple[str | None, str | None]:
        data, _ = loaded
        try:
            built = build_image(
                data,
                config_path=row.langgraph_config_path or "langgraph.json",
                project=_project(row.name),
                settings=self._settings,
                emit=emit,
                label=str(revision_id),
            )
        except BuildFailed as exc:
            return None, str(exc)
        except Exception as exc:  # a tool missing or broken: said, not hidden
            log.exception("image build failed unexpectedly")
            return None, f"the build could not run ({type(exc).__name__})"
        return built.ref, None

    async def _verdict(self, revision_id: uuid.UUID, image: str | None, error: str | None) -> None:
        async with self._db.write() as conn:
            await conn.execute(
                update(revisions)
                .where(
                    revisions.c.id == revision_id,
                    revisions.c.status == RevisionStatus.BUILDING.value,
                )
                .values(image_uri=image, build_error=error, next_step_at=time.time())
            )
        self._on_verdict()


def _project(name: str) -> str:
    """The directory name of a project at the archive's root: the deployment's name."""
    cleaned = "".join(c if c.isalnum() or c in "._-" else "-" for c in name).strip(".-")
    return cleaned or "project"


class _Lines:
    """A running build's log lines: emitted from its thread, written every half second."""

    def __init__(self, db: Database, deployment_id: uuid.UUID, revision_id: uuid.UUID) -> None:
        self._db = db
        self._ids = {"deployment_id": deployment_id, "revision_id": revision_id}
        self._pending: list[tuple[str, str]] = []
        self._loop = asyncio.get_running_loop()

    def emit(self, level: str, message: str) -> None:
        self._pending.append((level, message))

    def _threadsafe(self, level: str, message: str) -> None:
        self._loop.call_soon_threadsafe(self.emit, level, message)

    async def flush(self) -> None:
        batch, self._pending = self._pending, []
        if batch:
            async with self._db.write() as conn:
                await write_lines(conn, kind=LogKind.BUILD, lines=batch, **self._ids)

    async def during(
        self, work: Callable[..., tuple[str | None, str | None]], *args: Any
    ) -> tuple[str | None, str | None]:
        """Runs `work(*args, emit)` in a thread, writing its lines as they come."""
        future = asyncio.ensure_future(asyncio.to_thread(work, *args, self._threadsafe))
        while not future.done():
            await asyncio.wait({future}, timeout=_FLUSH_SECONDS)
            await self.flush()
        await asyncio.sleep(0)  # the lines the thread emitted last
        return future.result()
