"""Digests of secret values: enough to tell whether a PATCH changed a value, never
enough to test guesses of it without the server's key.

A digest is `v2:` + HMAC-SHA256(server key, deployment id + name + NUL + value). The
server key (`Database.secret_key`) is not in the rows it protects: it comes from the
config (`secret_digest_key`) or is generated once and kept beside the SQLite file (or,
on PostgreSQL, in its own table; see docs/emulator.md). The deployment id keeps equal
values of two deployments from having equal digests.
"""

from __future__ import annotations

import hashlib
import hmac
import uuid
from collections.abc import Sequence

from deployplane.api.models import Secret

__all__ = ["PREFIX", "changed", "digest", "records"]

PREFIX = "v2:"


def _message(secret: Secret) -> bytes:
    return f"{secret.name}\0{secret.value}".encode()


def digest(key: bytes, deployment_id: uuid.UUID, secret: Secret) -> str:
    mac = hmac.new(key, deployment_id.bytes + _message(secret), hashlib.sha256)
    return PREFIX + mac.hexdigest()


def _matches(key: bytes, deployment_id: uuid.UUID, secret: Secret, stored: str) -> bool:
    return hmac.compare_digest(digest(key, deployment_id, secret), stored)


def records(key: bytes, deployment_id: uuid.UUID, given: Sequence[Secret]) -> list[dict[str, str]]:
    """What the `secrets` column holds: names and digests, never values."""
    return [{"name": s.name, "digest": digest(key, deployment_id, s)} for s in given]


def changed(
    key: bytes, deployment_id: uuid.UUID, given: Sequence[Secret], stored: Sequence[dict[str, str]]
) -> bool:
    """Whether `given` differs from the stored set in names or in any value."""
    by_name = {record["name"]: record["digest"] for record in stored}
    if {secret.name for secret in given} != set(by_name) or len(given) != len(stored):
        return True
    return not all(_matches(key, deployment_id, s, by_name[s.name]) for s in given)
