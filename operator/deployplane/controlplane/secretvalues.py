"""Secret values kept for the data plane (docs/dataplane.md).

The published API never returns a secret's value, yet the listener agent must put it
into the cluster: the service keeps the values for its data plane, and so do we, in a
table of their own that only the data-plane extension reads.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence

from sqlalchemy import delete, insert, select

from deployplane.api.models import Secret
from deployplane.controlplane.db import DbConn, secret_values

__all__ = ["keep_secret_values", "read_secret_values"]


async def keep_secret_values(
    conn: DbConn, deployment_id: uuid.UUID, given: Sequence[Secret], *, created: bool
) -> None:
    """Stores the values a create or a PATCH gave (a PATCH replaces them all)."""
    if not created:
        await conn.execute(
            delete(secret_values).where(secret_values.c.deployment_id == deployment_id)
        )
    if given:
        values = {secret.name: secret.value for secret in given}
        await conn.execute(insert(secret_values).values(deployment_id=deployment_id, values=values))


async def read_secret_values(conn: DbConn, deployment_id: uuid.UUID) -> dict[str, str]:
    row = (
        await conn.execute(
            select(secret_values.c["values"]).where(secret_values.c.deployment_id == deployment_id)
        )
    ).first()
    return dict(row[0]) if row is not None else {}
