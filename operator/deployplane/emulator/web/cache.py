"""Serialised answers of the hot reads (a deployment, a revision), valid until the
next write.

Clients poll these (the operator polls revisions until they are terminal), so most
reads repeat the previous answer. Every write transaction of the process bumps
`Database.generation`; an entry made at an older generation is never served. That
sees every write only when the process is the only writer: true of SQLite (a second
process on the file is not supported), not of PostgreSQL, where several emulators may
share a database. So only SQLite databases are cached.
"""

from __future__ import annotations

from collections.abc import Hashable

from deployplane.emulator.store.db import Database

__all__ = ["ReadCache"]


class ReadCache:
    def __init__(self, db: Database, *, max_entries: int = 10_000) -> None:
        self._db = db
        # Off: nothing is stored, so `get` misses without a check of its own.
        self._enabled = db.is_sqlite
        self._max_entries = max_entries
        self._entries: dict[Hashable, tuple[int, bytes]] = {}

    @property
    def generation(self) -> int:
        """Take this before reading; pass it to `put` with what was read."""
        return self._db.generation

    def get(self, key: Hashable) -> bytes | None:
        entry = self._entries.get(key)
        if entry is not None and entry[0] == self._db.generation:
            return entry[1]
        return None

    def put(self, key: Hashable, generation: int, body: bytes) -> None:
        if not self._enabled:
            return
        if len(self._entries) >= self._max_entries:
            self._entries.clear()  # entries of old generations are dead weight anyway
        self._entries[key] = (generation, body)
