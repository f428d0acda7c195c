"""Serialised answers of the hot reads (a deployment, a revision), valid until the
next write.

Clients poll these (the operator polls revisions until they are terminal), so most
reads repeat the previous answer. Every write transaction of the process bumps
`Database.generation`; an entry made at an older generation is never served. The
emulator is the only writer of its database (a second process on the same file would
also run a second pipeline), so no write goes unseen.
"""

from __future__ import annotations

from collections.abc import Hashable

from deployplane.controlplane.db import Database

__all__ = ["ReadCache"]


class ReadCache:
    def __init__(self, db: Database, *, max_entries: int = 10_000) -> None:
        self._db = db
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
        if len(self._entries) >= self._max_entries:
            self._entries.clear()  # entries of old generations are dead weight anyway
        self._entries[key] = (generation, body)
