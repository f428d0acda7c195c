"""Build and deploy log lines of revisions: written by the pipeline (the build, the
deploy stages) and by the listener agent's reports; read with the filters the vendor's
CLI sends (`langgraph deploy logs`, `deploy --verbose`).

An offset is a line's `seq` (as text, as the CLI keeps it: `next_offset`): in `asc`
order the lines after it, in `desc` order the lines before it, so a reader that keeps
passing `next_offset` back never sees a line twice, however many are written
meanwhile.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterable
from datetime import UTC, datetime
from enum import StrEnum

from sqlalchemy import func, insert, select

from deployplane.api.models import LogEntry, LogLevel, LogOrder, LogsPage, LogsQuery
from deployplane.emulator.errors import InvalidError, invalid
from deployplane.emulator.settings import WorkspaceConfig
from deployplane.emulator.store.db import DbConn
from deployplane.emulator.store.revisions import check_deployment
from deployplane.emulator.store.rows import find_revision
from deployplane.emulator.store.tables import revision_logs, text_position

__all__ = ["LogKind", "read_logs", "write_lines"]

# A line is stored at most this long (a build tool may print long lines).
MAX_MESSAGE = 4000


class LogKind(StrEnum):
    BUILD = "build"
    DEPLOY = "deploy"


async def write_lines(
    conn: DbConn,
    *,
    deployment_id: uuid.UUID,
    revision_id: uuid.UUID,
    kind: LogKind,
    lines: Iterable[tuple[str, str]],
) -> None:
    """Appends (level, message) lines, stamped now. Never give a secret value here."""
    at_ms = int(time.time() * 1000)
    rows = [
        {
            "deployment_id": deployment_id,
            "revision_id": revision_id,
            "kind": kind.value,
            "at_ms": at_ms,
            "level": level,
            "message": message[:MAX_MESSAGE],
        }
        for level, message in lines
    ]
    if rows:
        await conn.execute(insert(revision_logs).values(rows))


_MAX_SEQ = 2**31 - 1


def _offset(value: str | None) -> int | None:
    if value is None:
        return None
    # ASCII digits within the seq column's range (Integer: 32 bits on PostgreSQL; a larger
    # value overflowed the database driver: a 500).
    if not (value.isascii() and value.isdigit()) or int(value) > _MAX_SEQ:
        raise InvalidError([invalid(("body", "offset"), "must be a next_offset of an answer")])
    return int(value)


def _ms(moment: datetime) -> int:
    """Milliseconds since the epoch; a time without a zone is UTC."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return int(moment.timestamp() * 1000)


async def read_logs(
    *,
    conn: DbConn,
    workspace: WorkspaceConfig,
    deployment_id: uuid.UUID,
    revision_id: uuid.UUID | None,
    kind: LogKind,
    query: LogsQuery,
) -> LogsPage:
    """The lines of a deployment (all its revisions) or of one revision, filtered."""
    await check_deployment(conn, workspace, deployment_id)
    if revision_id is not None:
        await find_revision(conn, deployment_id, revision_id)
    offset = _offset(query.offset)
    table = revision_logs.c
    stmt = select(table.seq, table.at_ms, table.level, table.message).where(
        table.deployment_id == deployment_id, table.kind == kind.value
    )
    if revision_id is not None:
        stmt = stmt.where(table.revision_id == revision_id)
    if query.level is not None:
        stmt = stmt.where(table.level == query.level.value)
    if query.query:
        stmt = stmt.where(text_position(func.lower(table.message), query.query.lower()) > 0)
    if query.start_time is not None:
        stmt = stmt.where(table.at_ms >= _ms(query.start_time))
    if query.end_time is not None:
        stmt = stmt.where(table.at_ms < _ms(query.end_time))
    ascending = query.order is LogOrder.ASC
    if offset is not None:
        stmt = stmt.where(table.seq > offset if ascending else table.seq < offset)
    stmt = stmt.order_by(table.seq.asc() if ascending else table.seq.desc()).limit(query.limit)
    rows = (await conn.execute(stmt)).all()
    logs = [
        LogEntry(
            id=str(row.seq), timestamp=row.at_ms, level=LogLevel(row.level), message=row.message
        )
        for row in rows
    ]
    next_offset = logs[-1].id if logs else query.offset
    return LogsPage(logs=logs, next_offset=next_offset)
