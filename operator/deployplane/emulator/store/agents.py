"""Listener agents' liveness: heartbeats, and which listeners have a live agent.

Part of the data-plane extension (docs/dataplane.md); the pipeline asks
`live_listeners` before handing a revision's deploy stages to an agent.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from typing import Any

from sqlalchemy import insert, select, update

from deployplane.api.dataplane import Heartbeat
from deployplane.emulator.settings import WorkspaceConfig
from deployplane.emulator.store.db import DbConn
from deployplane.emulator.store.rows import first_or_404, listener_not_found, owned
from deployplane.emulator.store.tables import builtin_agents, listener_agents, listeners

__all__ = [
    "AGENT_TTL_SECONDS",
    "Heartbeat",
    "builtin_listener_id",
    "check_listener",
    "heartbeat",
    "listener_of",
    "live_listeners",
    "runner_of",
    "runs_on",
]

AGENT_TTL_SECONDS = 30.0
"""A listener's agent is alive for this long after its last heartbeat. Agents beat at a
third of it, so one lost heartbeat does not hand work back to the timers."""


_BUILTIN = uuid.UUID("5f0e3c1a-6d2b-5b7e-9a41-64706c616e65")  # uuid5 namespace of ours


def builtin_listener_id(workspace_id: uuid.UUID) -> uuid.UUID:
    """The listener the emulator's built-in data plane stands for in a workspace: the
    deployments with no listener run there (a cloud deployment: the vendor runs it on
    its own compute). No listing shows it; only the data-plane extension knows it."""
    return uuid.uuid5(_BUILTIN, f"builtin-dataplane/{workspace_id}")


def listener_of(source_config: dict[str, Any] | None) -> uuid.UUID | None:
    raw = (source_config or {}).get("listener_id")
    return uuid.UUID(str(raw)) if raw else None


def runs_on(source_config: dict[str, Any] | None, workspace_id: uuid.UUID) -> uuid.UUID:
    """Whose agent runs a deployment: its listener's, else the built-in data plane's."""
    return listener_of(source_config) or builtin_listener_id(workspace_id)


def runner_of(row: Any) -> uuid.UUID:
    """`runs_on` of a deployment row (its `source_config` and `workspace_id`)."""
    return runs_on(row.source_config, row.workspace_id)


async def check_listener(conn: DbConn, workspace: WorkspaceConfig, listener_id: uuid.UUID) -> None:
    if listener_id == builtin_listener_id(workspace.id):
        return
    query = select(listeners.c.id).where(*owned(listeners, listener_id, workspace.id))
    await first_or_404(conn, query, listener_not_found, listener_id)


async def heartbeat(
    *, conn: DbConn, workspace: WorkspaceConfig, listener_id: uuid.UUID, now: float
) -> Heartbeat:
    await check_listener(conn, workspace, listener_id)
    values = {"workspace_id": workspace.id, "seen_at": now}
    table = builtin_agents if listener_id == builtin_listener_id(workspace.id) else listener_agents
    result = await conn.execute(
        update(table).where(table.c.listener_id == listener_id).values(values)
    )
    if not result.rowcount:
        # A concurrent first beat of the same listener fails on the primary key (and on
        # PostgreSQL aborts the transaction): a 500 that agent retries, never a loss.
        await conn.execute(insert(table).values(listener_id=listener_id, **values))
    return Heartbeat(listener_id=listener_id, ttl_seconds=AGENT_TTL_SECONDS)


async def live_listeners(
    conn: DbConn, listener_ids: Iterable[uuid.UUID], now: float
) -> set[uuid.UUID]:
    """Those of `listener_ids` whose agent is alive at `now`."""
    wanted = set(listener_ids)
    if not wanted:
        return set()
    live: set[uuid.UUID] = set()
    for table in (listener_agents, builtin_agents):
        rows = await conn.execute(
            select(table.c.listener_id).where(
                table.c.listener_id.in_(wanted), table.c.seen_at >= now - AGENT_TTL_SECONDS
            )
        )
        live.update(rows.scalars().all())
    return live
