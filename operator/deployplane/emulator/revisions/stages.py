"""What entering a pipeline stage does besides the move: the remote build of an
internal_source revision (on entering BUILDING) and the stage's log lines (a pure
function of the move, `stage_lines`). A listener agent's rollout writes the deploy
lines of the revisions it runs (`dataplane.py`)."""

from __future__ import annotations

import asyncio
from typing import Any, Protocol

from sqlalchemy import update

from deployplane.api.models import RevisionStatus, Source
from deployplane.emulator.builds.tarballcheck import BuildResult, check_build, image_for
from deployplane.emulator.store.artifacts import upload_data
from deployplane.emulator.store.db import DbConn
from deployplane.emulator.store.logs import LogKind, write_lines
from deployplane.emulator.store.rows import service_url
from deployplane.emulator.store.tables import revisions

__all__ = [
    "RERENDERED",
    "ImageBuilds",
    "StageLine",
    "builds_image",
    "entered",
    "hold_for_builder",
    "stage_lines",
]

RERENDERED = "Configuration change applied to the running revision"
"""The deploy log line of a simulated re-render (a change that made no revision)."""

StageLine = tuple[LogKind, str, str]  # kind, level, message

_BUILD, _DEPLOY = LogKind.BUILD, LogKind.DEPLOY


def stage_lines(
    source: Source, new: RevisionStatus, *, image: str | None, url: str, build_error: str | None
) -> list[StageLine]:
    """What the stage `new` (just entered) writes. `image` is what the revision runs,
    `build_error` why its build failed (already in the build log when it ran)."""
    if new is RevisionStatus.AWAITING_BUILD:
        return [(_BUILD, "INFO", "Build queued")]
    if new is RevisionStatus.BUILDING and source is Source.GIT_HOST:
        return [(_BUILD, "INFO", "Building from the repository")]
    if new is RevisionStatus.BUILDING and image is None and build_error is None:
        return [(_BUILD, "INFO", "Building the image")]  # by the image builder
    if new is RevisionStatus.BUILD_FAILED and build_error is None:
        return [(_BUILD, "ERROR", "Build failed (a configured failure rule of the emulator)")]
    if new is RevisionStatus.AWAITING_DEPLOY:
        lines: list[StageLine] = []
        if source in (Source.GIT_HOST, Source.INTERNAL_SOURCE):
            lines.append((_BUILD, "INFO", f"Build succeeded: {image or 'image built'}"))
        return [*lines, (_DEPLOY, "INFO", "Waiting to deploy")]
    if new is RevisionStatus.DEPLOYING:
        return [(_DEPLOY, "INFO", f"Deploying {image or 'the built image'}")]
    if new is RevisionStatus.DEPLOYED:
        return [(_DEPLOY, "INFO", f"Revision deployed; serving at {url}")]
    if new is RevisionStatus.DEPLOY_FAILED:
        return [(_DEPLOY, "ERROR", "Deploy failed (a configured failure rule of the emulator)")]
    return []


class ImageBuilds(Protocol):
    """What the pipeline needs of the image builder (`imagebuild.service.ImageBuilder`)."""

    def submit(self, revision_id: Any) -> None: ...

    def start(self) -> None: ...

    async def stop(self) -> None: ...


async def hold_for_builder(conn: DbConn, ids: list[Any]) -> None:
    """Takes the revisions handed to the image builder off the pipeline's timers until
    its verdict (which sets `next_step_at` again)."""
    if ids:
        await conn.execute(
            update(revisions).where(revisions.c.id.in_(ids)).values(next_step_at=None)
        )


def builds_image(source: Source, new: RevisionStatus) -> bool:
    """The move that starts the remote build of an upload."""
    return new is RevisionStatus.BUILDING and source is Source.INTERNAL_SOURCE


async def entered(
    conn: DbConn, row: Any, source: Source, new: RevisionStatus, *, checks_only: bool = True
) -> None:
    """Effects of the pipeline's move of `row` (a due revision) into `new`. The remote
    build is the upload's check here (`checks_only`), else the image builder's
    (`imagebuild.service`, which the pipeline hands the revision)."""
    image, build_error = row.image_uri, row.build_error
    if row.status == new.value:  # DEPLOYED again: the simulated re-render of a change
        lines: list[StageLine] = [(_DEPLOY, "INFO", RERENDERED)]
    else:
        if builds_image(source, new) and checks_only:
            image, build_error = await _build(conn, row)
        lines = stage_lines(
            source, new, image=image, url=service_url(row.deployment_id), build_error=build_error
        )
    for kind in LogKind:
        await write_lines(
            conn,
            deployment_id=row.deployment_id,
            revision_id=row.id,
            kind=kind,
            lines=[(level, message) for of, level, message in lines if of is kind],
        )


async def _build(conn: DbConn, row: Any) -> tuple[str | None, str | None]:
    """The remote build of an internal_source revision (`tarballcheck`), its lines in the
    build log and its verdict kept on the revision: the image it gives, or why it
    failed. Run off the event loop (unpacking a large tarball takes a while), inside
    the round's transaction, so the verdict lands with the BUILDING state."""
    loaded = await upload_data(conn, row.source_tarball_path) if row.source_tarball_path else None
    if loaded is None:
        result = BuildResult().fail("the uploaded source tarball is gone")
        digest = ""
    else:
        data, digest = loaded
        config_path = row.langgraph_config_path or "langgraph.json"
        result = await asyncio.to_thread(check_build, data, config_path)
    image = image_for(row.name, digest) if result.error is None else None
    await conn.execute(
        update(revisions)
        .where(revisions.c.id == row.id)
        .values(image_uri=image, build_error=result.error)
    )
    await write_lines(
        conn,
        deployment_id=row.deployment_id,
        revision_id=row.id,
        kind=LogKind.BUILD,
        lines=result.lines,
    )
    return image, result.error
