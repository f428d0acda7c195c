"""Tables and the database handle.

SQLAlchemy Core tables rather than ORM classes: every request is one or two small
statements, and skipping the identity map and unit of work keeps the request path
short (see bench/controlplane.py).

SQLite allows one writer at a time. A deferred transaction that reads and then writes
can fail with SQLITE_BUSY at once, without honouring busy_timeout, when another
connection wrote in between; so within the process, write transactions are serialised
by an asyncio lock. PostgreSQL needs no such lock and gets none.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlalchemy import (
    JSON,
    Column,
    DateTime,
    Dialect,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    TypeDecorator,
    UniqueConstraint,
    Uuid,
    event,
)
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, create_async_engine

__all__ = [
    "Database",
    "deployments",
    "listeners",
    "metadata",
    "revisions",
    "tracing_projects",
    "utcnow",
]


def utcnow() -> datetime:
    return datetime.now(UTC)


class UTCDateTime(TypeDecorator[datetime]):
    """Stores UTC without a zone (SQLite has none) and reads it back zone-aware."""

    impl = DateTime
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        return value.astimezone(UTC).replace(tzinfo=None)

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        return value.replace(tzinfo=UTC)


metadata = MetaData()

deployments = Table(
    "deployments",
    metadata,
    Column("id", Uuid, primary_key=True),
    Column("workspace_id", Uuid, nullable=False),
    Column("name", String, nullable=False),
    Column("source", String, nullable=False),
    Column("source_config", JSON, nullable=False),
    # [{"name": ..., "digest": hmac(value)}]: values are never stored, only enough to
    # tell whether a PATCH changed them.
    Column("secrets", JSON, nullable=False),
    Column("status", String, nullable=False),
    Column("latest_revision_id", Uuid, nullable=True),
    Column("active_revision_id", Uuid, nullable=True),
    Column("image_version", String, nullable=True),
    Column("created_at", UTCDateTime, nullable=False),
    Column("updated_at", UTCDateTime, nullable=False),
    # epoch seconds at which an AWAITING_DELETE deployment is removed
    Column("delete_at", Float, nullable=True),
    # The unique constraint, not a lookup before the insert, is what makes concurrent
    # creates of one name answer exactly one success and 409 for the rest.
    UniqueConstraint("workspace_id", "name", name="uq_deployment_workspace_name"),
    Index("ix_deployments_delete_at", "delete_at"),
)

tracing_projects = Table(
    "tracing_projects",
    metadata,
    Column("id", Uuid, primary_key=True),
    Column("workspace_id", Uuid, nullable=False),
    Column("name", String, nullable=False),
    Column("deployment_id", Uuid, ForeignKey("deployments.id", ondelete="CASCADE"), nullable=True),
    Column("created_at", UTCDateTime, nullable=False),
    UniqueConstraint("workspace_id", "name", name="uq_tracing_project_workspace_name"),
)

revisions = Table(
    "revisions",
    metadata,
    Column("id", Uuid, primary_key=True),
    Column(
        "deployment_id",
        Uuid,
        ForeignKey("deployments.id", ondelete="CASCADE"),
        nullable=False,
    ),
    Column("seq", Integer, nullable=False),
    Column("source", String, nullable=False),
    Column("status", String, nullable=False),
    Column("repo_ref", String, nullable=True),
    Column("graph_config_path", String, nullable=True),
    Column("image_uri", String, nullable=True),
    Column("repo_commit_sha", String, nullable=True),
    Column("created_at", UTCDateTime, nullable=False),
    Column("updated_at", UTCDateTime, nullable=False),
    # epoch seconds at which the pipeline moves this revision on; null once terminal
    Column("next_step_at", Float, nullable=True),
    UniqueConstraint("deployment_id", "seq", name="uq_revision_deployment_seq"),
    Index("ix_revisions_next_step_at", "next_step_at"),
)

listeners = Table(
    "listeners",
    metadata,
    Column("id", Uuid, primary_key=True),
    Column("workspace_id", Uuid, nullable=False),
    Column("compute_type", String, nullable=False),
    Column("compute_id", String, nullable=False),
    Column("compute_config", JSON, nullable=True),
    Column("version", String, nullable=True),
    Column("created_at", UTCDateTime, nullable=False),
    Column("updated_at", UTCDateTime, nullable=False),
    UniqueConstraint("workspace_id", "compute_id", name="uq_listener_workspace_compute_id"),
)


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    # WAL lets readers proceed during a write; synchronous=NORMAL is durable across
    # process crashes (only an OS crash may lose the last transactions) and avoids
    # an fsync per commit.
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute("PRAGMA busy_timeout=5000")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.close()


class Database:
    """One engine for the app's lifetime, and the write lock SQLite needs."""

    def __init__(self, url: str) -> None:
        parsed = make_url(url)
        self.is_sqlite = parsed.get_backend_name() == "sqlite"
        kwargs: dict[str, Any] = {}
        if self.is_sqlite:
            database = parsed.database
            if database and database != ":memory:":
                Path(database).parent.mkdir(parents=True, exist_ok=True)
            kwargs["pool_size"] = 8
            kwargs["max_overflow"] = 8
        self.engine: AsyncEngine = create_async_engine(url, **kwargs)
        if self.is_sqlite:
            event.listen(self.engine.sync_engine, "connect", _sqlite_pragmas)
        self._write_lock = asyncio.Lock()

    async def create_schema(self) -> None:
        async with self.engine.begin() as conn:
            await conn.run_sync(metadata.create_all)

    async def dispose(self) -> None:
        await self.engine.dispose()

    @asynccontextmanager
    async def read(self) -> AsyncIterator[AsyncConnection]:
        async with self.engine.connect() as conn:
            yield conn

    @asynccontextmanager
    async def write(self) -> AsyncIterator[AsyncConnection]:
        """A transaction, committed on success and rolled back on error."""
        if self.is_sqlite:
            async with self._write_lock, self.engine.begin() as conn:
                yield conn
        else:
            async with self.engine.begin() as conn:
                yield conn
