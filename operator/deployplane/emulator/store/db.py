"""The database handle: engines, transactions, and the server-side digest key.

SQLite allows one writer at a time. A deferred transaction that reads and then writes
can fail with SQLITE_BUSY at once, without honouring busy_timeout, when another
connection wrote in between; so within the process, write transactions are serialised
by an asyncio lock. PostgreSQL needs no such lock and gets none: there requests and
the pipeline write concurrently, and row locks order them (see `store` and `pipeline`);
several emulator processes may even share one database. See `DbConn` for why SQLite
statements run on the event loop itself. The tables are in `tables.py`.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import os
import secrets
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import event, insert, select, text
from sqlalchemy.engine import URL, Connection, CursorResult, Engine, create_engine, make_url
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, create_async_engine
from sqlalchemy.sql import Executable

from deployplane.emulator.store.tables import (
    add_missing_columns,
    add_missing_indexes,
    emulator_keys,
    metadata,
)

__all__ = [
    "KEY_FILE_SUFFIX",
    "Database",
    "DatabaseUnavailable",
    "DbConn",
    "check_database",
    "masked_url",
]


_SECRET_KEY_NAME = "secret_digest"
_DEV_API_KEY_NAME = "dev_api_key"
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
        return bytes.fromhex(
            await self.kept_value(_SECRET_KEY_NAME, lambda: secrets.token_bytes(32).hex())
        )

    async def kept_value(self, name: str, make: Callable[[], str]) -> str:
        """The value stored under `name` in the emulator's own table, made by `make` and
        stored the first time; emulators sharing the database agree on the first one."""
        if self.is_sqlite and self._sqlite_file is None:
            return make()  # in memory: nothing outlives the process anyway
        row = insert(emulator_keys).values(name=name, value=make())
        query = select(emulator_keys.c.value).where(emulator_keys.c.name == name)
        if self._sync_engine is not None:
            with contextlib.suppress(IntegrityError), self._sync_engine.begin() as conn:
                conn.execute(row)
            with self._sync_engine.connect() as conn:
                return str(conn.execute(query).scalar_one())
        assert self._async_engine is not None
        try:
            async with self._async_engine.begin() as conn:
                await conn.execute(row)
        except IntegrityError:
            pass  # made before, by this or another emulator
        async with self._async_engine.connect() as conn:
            return str((await conn.execute(query)).scalar_one())

    async def create_schema(self) -> None:
        if self._sync_engine is not None:
            with self._sync_engine.begin() as conn:
                metadata.create_all(conn)
                add_missing_columns(conn)
                add_missing_indexes(conn)
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
                await conn.run_sync(add_missing_columns)
                await conn.run_sync(add_missing_indexes)

    async def dispose(self) -> None:
        if self._sync_engine is not None:
            self._sync_engine.dispose()
        if self._async_engine is not None:
            await self._async_engine.dispose()

    @asynccontextmanager
    async def _connect(self, *, transaction: bool) -> AsyncIterator[DbConn]:
        """A connection of whichever engine this database has; with `transaction`, in
        one transaction, committed on success and rolled back on error."""
        if self._sync_engine is not None:
            engine = self._sync_engine
            with engine.begin() if transaction else engine.connect() as conn:
                yield DbConn(sync=conn, secret_key=self._secret_key)
        else:
            assert self._async_engine is not None
            aengine = self._async_engine
            async with aengine.begin() if transaction else aengine.connect() as aconn:
                yield DbConn(async_=aconn, secret_key=self._secret_key)

    def read(self) -> AbstractAsyncContextManager[DbConn]:
        return self._connect(transaction=False)

    @asynccontextmanager
    async def write(self) -> AsyncIterator[DbConn]:
        """A transaction, committed on success and rolled back on error."""
        # Only SQLite (the sync engine) serialises its writes; see the module docstring.
        lock = self._write_lock if self._sync_engine is not None else contextlib.nullcontext()
        try:
            async with lock, self._connect(transaction=True) as conn:
                yield conn
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


class DatabaseUnavailable(Exception):
    """The database cannot be opened; the message is safe to print (no password)."""


async def check_database(
    url: str, *, secret_digest_key: str | None = None, dev_api_key: str | None = None
) -> str | None:
    """Open the database, create the schema and load the digest key once, before the
    server starts, so that a wrong URL, driver or password (or a damaged key file) is one
    clear line, not a traceback from the ASGI lifespan. Raises `DatabaseUnavailable`;
    its message never holds the password.

    With `dev_api_key` (a newly generated key), returns the dev workspace's key kept in
    the database: that one the first time, the same one at every later start, so a key
    exported once keeps working."""
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
        if dev_api_key is not None:
            return await db.kept_value(_DEV_API_KEY_NAME, lambda: dev_api_key)
        return None
    except Exception as exc:
        reason = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        for value in hidden:
            reason = reason.replace(value, "***")
        raise DatabaseUnavailable(f"cannot open the database {shown}: {reason}") from None
    finally:
        if db is not None:
            await db.dispose()
