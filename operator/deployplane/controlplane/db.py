"""Tables and the database handle.

SQLAlchemy Core tables rather than ORM classes: every request is one or two small
statements, and skipping the identity map and unit of work keeps the request path
short (see bench/controlplane.py).

SQLite allows one writer at a time. A deferred transaction that reads and then writes
can fail with SQLITE_BUSY at once, without honouring busy_timeout, when another
connection wrote in between; so within the process, write transactions are serialised
by an asyncio lock. PostgreSQL needs no such lock and gets none: there requests and
the pipeline write concurrently, and row locks order them (see `store` and `pipeline`);
several emulator processes may even share one database. See `DbConn` for why SQLite
statements run on the event loop itself.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import os
import secrets
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlalchemy import (
    JSON,
    Boolean,
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
    false,
    insert,
    inspect,
    select,
    text,
)
from sqlalchemy.engine import URL, Connection, CursorResult, Engine, create_engine, make_url
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, create_async_engine
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.sql import Executable
from sqlalchemy.sql.compiler import SQLCompiler
from sqlalchemy.sql.functions import FunctionElement

__all__ = [
    "KEY_FILE_SUFFIX",
    "Database",
    "DatabaseUnavailable",
    "DbConn",
    "check_database",
    "dataplane_revisions",
    "deployments",
    "emulator_keys",
    "listener_agents",
    "listeners",
    "masked_url",
    "metadata",
    "revisions",
    "secret_values",
    "text_position",
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


class text_position(FunctionElement[int]):  # lower case: used like a SQL function
    """`text_position(column, needle)`: where the needle first occurs in the column, from
    1; 0 if nowhere. Compared literally and with case: `text_position(c, x) > 0` is the
    substring test LIKE is not (SQLite's LIKE ignores ASCII case and PostgreSQL's does
    not, so one query answered differently on the two; and LIKE needs its wildcards
    escaped)."""

    type = Integer()
    name = "text_position"
    inherit_cache = True


@compiles(text_position)
def _text_position(element: text_position, compiler: SQLCompiler, **kw: Any) -> str:
    column, needle = element.clauses
    return f"strpos({compiler.process(column, **kw)}, {compiler.process(needle, **kw)})"


@compiles(text_position, "sqlite")
def _text_position_sqlite(element: text_position, compiler: SQLCompiler, **kw: Any) -> str:
    column, needle = element.clauses
    return f"instr({compiler.process(column, **kw)}, {compiler.process(needle, **kw)})"


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
    # [{"name", "secret_name", "secret_key"}] or null: references, never values
    Column("secret_references", JSON, nullable=True),
    Column("status", String, nullable=False),
    Column("latest_revision_id", Uuid, nullable=True),
    Column("active_revision_id", Uuid, nullable=True),
    Column("image_version", String, nullable=True),
    Column("created_at", UTCDateTime, nullable=False),
    Column("updated_at", UTCDateTime, nullable=False),
    # epoch seconds at which an AWAITING_DELETE deployment is removed
    Column("delete_at", Float, nullable=True),
    # the DELETE's delete_tracing_project: whether the tracing project goes too
    Column("delete_tracing_project", Boolean, nullable=False, server_default=false()),
    # The unique constraint, not a lookup before the insert, is what makes concurrent
    # creates of one name answer exactly one success and 400 for the rest.
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
    # The service's "applied by the data plane": false when created; see
    # `store.remote_reconciled_condition` for how deployments are filtered by it.
    Column("remote_reconciled", Boolean, nullable=False, server_default=false()),
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

# The data-plane extension (docs/dataplane.md). Tables of their own, not columns: an
# existing database gains them from create_all, which never alters a table.
listener_agents = Table(
    "listener_agents",
    metadata,
    Column("listener_id", Uuid, ForeignKey("listeners.id", ondelete="CASCADE"), primary_key=True),
    Column("workspace_id", Uuid, nullable=False),
    # epoch seconds of the agent's last heartbeat; alive while within AGENT_TTL_SECONDS
    Column("seen_at", Float, nullable=False),
)

# A row = the revision's deploy stages belong to the listener's agent, not the timers.
dataplane_revisions = Table(
    "dataplane_revisions",
    metadata,
    Column("revision_id", Uuid, ForeignKey("revisions.id", ondelete="CASCADE"), primary_key=True),
    Column("deployment_id", Uuid, nullable=False),
    Column("listener_id", Uuid, nullable=False),
    # the agent's last word on the rollout, e.g. why it failed (never secret values)
    Column("message", String, nullable=True),
    Column("reported_at", UTCDateTime, nullable=True),
    Index("ix_dataplane_revisions_deployment", "deployment_id"),
)

# The values of a deployment's secrets, for the listener agent that must put them in
# the cluster (the published API returns names only, and `deployments.secrets` keeps
# digests). Only read by the data-plane extension; never logged or returned elsewhere.
secret_values = Table(
    "secret_values",
    metadata,
    Column(
        "deployment_id",
        Uuid,
        ForeignKey("deployments.id", ondelete="CASCADE"),
        primary_key=True,
    ),
    Column("values", JSON, nullable=False),
)


# Server-side keys that must not live in the rows they protect (PostgreSQL only; see
# `Database.load_secret_key`).
emulator_keys = Table(
    "emulator_keys",
    metadata,
    Column("name", String, primary_key=True),
    Column("value", String, nullable=False),
)

_SECRET_KEY_NAME = "secret_digest"
KEY_FILE_SUFFIX = ".digest-key"


def _key_file(path: Path) -> bytes:
    """The key in `path`, created (owner-only, 0600) with a random one the first time.

    Written whole to a temporary file and then linked into place, so the key file
    either does not exist or holds a complete key, even after a crash mid-write; two
    processes creating it at once agree on the first one linked."""
    try:
        return _read_key(path)
    except FileNotFoundError:
        pass
    temporary = path.with_name(f"{path.name}.{secrets.token_hex(8)}.tmp")
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(descriptor, "w", encoding="ascii") as file:
            file.write(secrets.token_bytes(32).hex() + "\n")
            file.flush()
            os.fsync(file.fileno())
        with contextlib.suppress(FileExistsError):
            os.link(temporary, path)
    finally:
        temporary.unlink()
    return _read_key(path)


def _read_key(path: Path) -> bytes:
    text = path.read_text(encoding="ascii").strip()
    try:
        key = bytes.fromhex(text)
    except ValueError:
        key = b""
    if len(key) != 32:  # said without the content: it is (part of) a key
        raise RuntimeError(f"{path} does not hold a 64-digit hex key; remove or restore it")
    return key


# pg_advisory_xact_lock key held while the schema is created ("dplane" in ASCII).
_SCHEMA_LOCK_KEY = 0x64706C616E65


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


class DbConn:
    """What the store executes statements on, over either kind of engine.

    For SQLite the statements run synchronously on the event loop: a statement on a
    local WAL database takes microseconds, while aiosqlite's hop to its thread and back
    per statement cost more than the statement (and dominated bench/controlplane.py).
    Within the process writers are serialised by `Database.write`, and WAL readers
    never wait, so the loop is not held by lock waits. Other databases are async.
    """

    __slots__ = ("_async", "_secret_key", "_sync")

    def __init__(
        self,
        *,
        sync: Connection | None = None,
        async_: AsyncConnection | None = None,
        secret_key: bytes | None = None,
    ) -> None:
        self._sync = sync
        self._async = async_
        self._secret_key = secret_key

    @property
    def secret_key(self) -> bytes:
        """The server-side key of secret digests (`secretdigest`), handed to the store
        with the connection it writes them on."""
        if self._secret_key is None:
            raise RuntimeError("Database.load_secret_key() was not awaited (the lifespan does)")
        return self._secret_key

    @property
    def concurrent(self) -> bool:
        """Whether other transactions may write while this one runs, so a read that
        decides a write must lock its rows (not SQLite: writers are serialised)."""
        return self._sync is None

    async def execute(
        self, statement: Executable, parameters: dict[str, Any] | None = None
    ) -> CursorResult[Any]:
        if self._sync is not None:
            return self._sync.execute(statement, parameters)
        assert self._async is not None
        return await self._async.execute(statement, parameters)


class Database:
    """One engine for the app's lifetime, and the write lock SQLite needs."""

    def __init__(self, url: str) -> None:
        parsed = make_url(url)
        self.is_sqlite = parsed.get_backend_name() == "sqlite"
        self.is_postgresql = parsed.get_backend_name() == "postgresql"
        self._sync_engine: Engine | None = None
        self._async_engine: AsyncEngine | None = None
        if self.is_sqlite:
            database = parsed.database
            if database and database != ":memory:":
                Path(database).parent.mkdir(parents=True, exist_ok=True)
            self._sync_engine = create_engine(
                parsed.set(drivername="sqlite"),
                pool_size=4,
                max_overflow=8,
                connect_args={"check_same_thread": False},
                # errors never quote statement parameters into logs
                hide_parameters=True,
            )
            event.listen(self._sync_engine, "connect", _sqlite_pragmas)
        else:
            self._async_engine = create_async_engine(url, pool_pre_ping=True, hide_parameters=True)
        self._write_lock = asyncio.Lock()
        # Bumped after every write transaction; see cache.ReadCache.
        self.generation = 0
        self._sqlite_file = (
            Path(parsed.database)
            if self.is_sqlite and parsed.database and parsed.database != ":memory:"
            else None
        )
        self._secret_key: bytes | None = None

    async def load_secret_key(self, configured: str | None) -> None:
        """The key of secret digests, from outside the rows it protects: the config's
        `secret_digest_key`; else a file beside the SQLite database (a copy of the
        database file alone cannot test guesses); else, on PostgreSQL, where emulators
        sharing the database must share it, a row of its own table, generated once."""
        if configured is not None:
            self._secret_key = hashlib.sha256(configured.encode()).digest()
        elif self._sqlite_file is not None:
            path = self._sqlite_file.with_name(self._sqlite_file.name + KEY_FILE_SUFFIX)
            self._secret_key = _key_file(path)
        elif self.is_sqlite:  # in memory: nothing outlives the process
            self._secret_key = secrets.token_bytes(32)
        else:
            self._secret_key = await self._stored_key()

    async def _stored_key(self) -> bytes:
        assert self._async_engine is not None
        try:
            async with self._async_engine.begin() as conn:
                await conn.execute(
                    insert(emulator_keys).values(
                        name=_SECRET_KEY_NAME, value=secrets.token_bytes(32).hex()
                    )
                )
        except IntegrityError:
            pass  # generated before, by this or another emulator
        async with self._async_engine.connect() as conn:
            value = (
                await conn.execute(
                    select(emulator_keys.c.value).where(emulator_keys.c.name == _SECRET_KEY_NAME)
                )
            ).scalar_one()
        return bytes.fromhex(value)

    async def create_schema(self) -> None:
        if self._sync_engine is not None:
            with self._sync_engine.begin() as conn:
                metadata.create_all(conn)
                _add_missing_columns(conn)
        else:
            assert self._async_engine is not None
            async with self._async_engine.begin() as conn:
                if self.is_postgresql:
                    # create_all looks, then creates: emulators starting together on
                    # one empty database would both create (a duplicate key error).
                    await conn.execute(
                        text("SELECT pg_advisory_xact_lock(:key)"), {"key": _SCHEMA_LOCK_KEY}
                    )
                await conn.run_sync(metadata.create_all)
                await conn.run_sync(_add_missing_columns)

    async def dispose(self) -> None:
        if self._sync_engine is not None:
            self._sync_engine.dispose()
        if self._async_engine is not None:
            await self._async_engine.dispose()

    @asynccontextmanager
    async def read(self) -> AsyncIterator[DbConn]:
        if self._sync_engine is not None:
            with self._sync_engine.connect() as conn:
                yield DbConn(sync=conn, secret_key=self._secret_key)
        else:
            assert self._async_engine is not None
            async with self._async_engine.connect() as aconn:
                yield DbConn(async_=aconn, secret_key=self._secret_key)

    @asynccontextmanager
    async def write(self) -> AsyncIterator[DbConn]:
        """A transaction, committed on success and rolled back on error."""
        try:
            if self._sync_engine is not None:
                async with self._write_lock:
                    with self._sync_engine.begin() as conn:
                        yield DbConn(sync=conn, secret_key=self._secret_key)
            else:
                assert self._async_engine is not None
                async with self._async_engine.begin() as aconn:
                    yield DbConn(async_=aconn, secret_key=self._secret_key)
        finally:
            self.generation += 1


def _secret_query_key(key: str) -> bool:
    lowered = key.lower()
    return "password" in lowered or lowered in {"passwd", "pwd"}


def masked_url(url: URL) -> tuple[str, list[str]]:
    """The URL as it may be printed, and the values it hides: the password of the user
    part and of every query parameter named like one (`?password=`, `sslpassword`)."""
    hidden = [str(url.password)] if url.password else []
    query: dict[str, str | tuple[str, ...]] = {}
    for key, value in url.query.items():
        if _secret_query_key(key):
            values = (value,) if isinstance(value, str) else tuple(value)
            hidden += [v for v in values if v]
            query[key] = "***" if isinstance(value, str) else tuple("***" for _ in value)
        else:
            query[key] = value
    # rendering quotes query values: *** becomes %2A%2A%2A
    shown = url.set(query=query).render_as_string(hide_password=True).replace("%2A", "*")
    return shown, sorted(hidden, key=len, reverse=True)  # longest first: no partial leaks


def _add_missing_columns(conn: Connection) -> None:
    """Columns added since a database was made (create_all creates only whole tables):
    each added with its server default, so a database of an earlier version keeps
    working, its rows intact."""
    inspector = inspect(conn)
    for table in metadata.sorted_tables:
        present = {column["name"] for column in inspector.get_columns(table.name)}
        for column in table.columns:
            if column.name in present:
                continue
            ddl = f"ALTER TABLE {table.name} ADD COLUMN {column.name} "
            ddl += column.type.compile(dialect=conn.dialect)
            if column.server_default is not None:
                default = column.server_default.arg  # type: ignore[attr-defined]
                ddl += f" DEFAULT {default.compile(dialect=conn.dialect)}"
            if not column.nullable:
                ddl += " NOT NULL"
            conn.execute(text(ddl))


class DatabaseUnavailable(Exception):
    """The database cannot be opened; the message is safe to print (no password)."""


async def check_database(url: str, *, secret_digest_key: str | None = None) -> None:
    """Open the database, create the schema and load the digest key once, before the
    server starts, so that a wrong URL, driver or password (or a damaged key file) is one
    clear line, not a traceback from the ASGI lifespan. Raises `DatabaseUnavailable`;
    its message never holds the password."""
    try:
        parsed = make_url(url)
    except Exception:
        # The unparsed text may hold a password: say what is wrong, not what was given.
        raise DatabaseUnavailable(
            "the database URL is not a SQLAlchemy URL "
            "(sqlite+aiosqlite:///FILE or postgresql+asyncpg://USER:PASSWORD@HOST/DB)"
        ) from None
    shown, hidden = masked_url(parsed)
    db: Database | None = None
    try:
        db = Database(url)
        await db.create_schema()
        await db.load_secret_key(secret_digest_key)
    except Exception as exc:
        reason = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        for value in hidden:
            reason = reason.replace(value, "***")
        raise DatabaseUnavailable(f"cannot open the database {shown}: {reason}") from None
    finally:
        if db is not None:
            await db.dispose()
