"""Secret values kept for the data plane (docs/dataplane.md).

The published API never returns a secret's value, yet the listener agent must put it
into the cluster: the service keeps the values for its data plane, and so do we, in a
table of their own that only the data-plane extension reads.

The values are encrypted at rest (AES-256-GCM) under a key derived from the emulator's
server-side key (the one the secret digests use, kept outside the rows it protects), so
a copy of the database alone holds neither the values nor a way to test guesses of
them. The deployment id is the associated data: a row copied onto another deployment
does not decrypt.
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import json
import os
import uuid
from collections.abc import Sequence
from typing import Any

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from sqlalchemy import bindparam, delete, insert, select

from deployplane.api.models import Secret
from deployplane.emulator.errors import ConflictError
from deployplane.emulator.store.db import DbConn
from deployplane.emulator.store.tables import secret_values

__all__ = ["keep_secret_values", "read_secret_values"]

_SCHEME = "aesgcm-v1"


@functools.lru_cache(maxsize=4)
def _cipher(server_key: bytes) -> AESGCM:
    # Its own key, derived: the digest HMACs and this cipher never share key material.
    # Derived once per server key (an app has one): deriving it and setting up the
    # cipher on every create cost a tenth of the request (bench/controlplane.py).
    return AESGCM(hmac.new(server_key, b"deployplane secret values", hashlib.sha256).digest())


# Built once and executed with parameters, as the store's statements (store/rows.py).
_INSERT_VALUES = insert(secret_values)
_DELETE_VALUES = delete(secret_values).where(
    secret_values.c.deployment_id == bindparam("deployment_id")
)


def seal(server_key: bytes, deployment_id: uuid.UUID, values: dict[str, str]) -> dict[str, str]:
    """The stored form of `values`: nonce and ciphertext, never the plain text."""
    nonce = os.urandom(12)
    plain = json.dumps(values, sort_keys=True).encode()
    sealed = _cipher(server_key).encrypt(nonce, plain, deployment_id.bytes)
    return {"scheme": _SCHEME, "nonce": nonce.hex(), "ciphertext": sealed.hex()}


def unseal(server_key: bytes, deployment_id: uuid.UUID, stored: dict[str, Any]) -> dict[str, str]:
    """The values of a stored row; a row this key cannot open is a clear 409."""
    try:
        if stored.get("scheme") != _SCHEME:
            raise ValueError(stored.get("scheme"))
        plain = _cipher(server_key).decrypt(
            bytes.fromhex(stored["nonce"]), bytes.fromhex(stored["ciphertext"]), deployment_id.bytes
        )
    except (InvalidTag, ValueError, KeyError, TypeError):
        raise ConflictError(
            f"The secret values of deployment {deployment_id} cannot be read with this "
            "emulator's key (was the key changed?); PATCH its secrets again."
        ) from None
    values: dict[str, str] = json.loads(plain)
    return values


async def keep_secret_values(
    conn: DbConn, deployment_id: uuid.UUID, given: Sequence[Secret], *, created: bool
) -> None:
    """Stores the values a create or a PATCH gave (a PATCH replaces them all)."""
    if not created:
        await conn.execute(_DELETE_VALUES, {"deployment_id": deployment_id})
    if given:
        values = {secret.name: secret.value for secret in given}
        sealed = seal(conn.secret_key, deployment_id, values)
        await conn.execute(_INSERT_VALUES, {"deployment_id": deployment_id, "values": sealed})


async def read_secret_values(conn: DbConn, deployment_id: uuid.UUID) -> dict[str, str]:
    row = (
        await conn.execute(
            select(secret_values.c["values"]).where(secret_values.c.deployment_id == deployment_id)
        )
    ).first()
    return unseal(conn.secret_key, deployment_id, dict(row[0])) if row is not None else {}
