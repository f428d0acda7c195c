"""Deployments keyed by an agent and an environment (the vendor CLI's agent mode): the
name a create gets, one deployment per agent and environment, the list filters and the
agent a row shows (docs/emulator.md, "Agent mode")."""

from __future__ import annotations

import hashlib
import uuid
from typing import Any

from sqlalchemy import Row, exists, or_, select, text
from sqlalchemy.exc import IntegrityError

from deployplane.api.models import AgentEnvironment, DeploymentAgent, DeploymentCreate
from deployplane.emulator.errors import ConflictError, ForbiddenError
from deployplane.emulator.rules.agents import (
    AGENT_MODE_OFF,
    AGENT_TAKEN,
    agent_deployment_name,
    suffixed_name,
)
from deployplane.emulator.settings import WorkspaceConfig
from deployplane.emulator.store.db import DbConn
from deployplane.emulator.store.tables import deployments, tracing_projects

__all__ = [
    "agent_columns",
    "agent_filtered",
    "agent_of",
    "agent_taken",
    "check_agent_mode",
    "name_of_new",
]

# What identifies the agent index in a failed insert's message: its name (PostgreSQL)
# or its columns (SQLite, which names the columns only).
_AGENT_INDEX_MARKS = ("uq_deployment_workspace_agent", "deployments.agent_environment")


def check_agent_mode(workspace: WorkspaceConfig, *fields: object) -> None:
    """403 when the workspace has agent mode off and any agent field is given."""
    if not workspace.agent_mode and any(field is not None for field in fields):
        raise ForbiddenError(AGENT_MODE_OFF)


async def name_of_new(
    conn: DbConn, workspace: WorkspaceConfig, body: DeploymentCreate, deployment_id: uuid.UUID
) -> str:
    """The name a create gives its deployment: the body's, or for an agent the control
    plane's own (`rules.agents`), suffixed when taken. 409 when the agent already has a
    deployment in that environment (the unique index decides a race: `agent_taken`)."""
    if body.agent is None:
        assert body.name is not None  # the model holds one of the two
        return body.name
    if conn.concurrent:
        # Concurrent creates of one agent and environment queue here, so the second
        # finds the first's deployment (a 409 naming it) instead of both taking the
        # same name, which would break the name's constraint first (a 400).
        await conn.execute(_AGENT_LOCK, {"key": _lock_key(workspace.id, body.agent)})
    existing = await _deployment_of(conn, workspace.id, body.agent)
    if existing is not None:
        raise ConflictError(f"{AGENT_TAKEN}: deployment {existing}.")
    name = agent_deployment_name(body.agent)
    if await _name_taken(conn, workspace.id, name):
        name = suffixed_name(name, deployment_id)
    return name


_AGENT_LOCK = text("SELECT pg_advisory_xact_lock(:key)")


def _lock_key(workspace_id: uuid.UUID, agent: DeploymentAgent) -> int:
    """A 64-bit advisory lock key of one agent and environment in a workspace."""
    named = f"{workspace_id}\0{agent.agent_id}\0{agent.environment.value}".encode()
    return int.from_bytes(hashlib.sha256(named).digest()[:8], "big", signed=True)


def agent_taken(error: IntegrityError) -> ConflictError | None:
    """The 409 of an insert that lost the race for an agent and environment to another
    create; None when it broke another constraint (a name)."""
    text = str(error.orig)
    if any(mark in text for mark in _AGENT_INDEX_MARKS):
        return ConflictError(f"{AGENT_TAKEN}.")
    return None


async def _deployment_of(
    conn: DbConn, workspace_id: uuid.UUID, agent: DeploymentAgent
) -> uuid.UUID | None:
    query = select(deployments.c.id).where(
        deployments.c.workspace_id == workspace_id,
        deployments.c.agent_id == agent.agent_id,
        deployments.c.agent_environment == agent.environment.value,
    )
    found: uuid.UUID | None = (await conn.execute(query)).scalar()
    return found


async def _name_taken(conn: DbConn, workspace_id: uuid.UUID, name: str) -> bool:
    in_use = or_(
        exists().where(deployments.c.workspace_id == workspace_id, deployments.c.name == name),
        exists().where(
            tracing_projects.c.workspace_id == workspace_id, tracing_projects.c.name == name
        ),
    )
    return bool((await conn.execute(select(in_use))).scalar())


def agent_columns(agent: DeploymentAgent | None) -> dict[str, str | None]:
    """The deployment row's agent columns."""
    if agent is None:
        return {"agent_id": None, "agent_environment": None}
    return {"agent_id": agent.agent_id, "agent_environment": agent.environment.value}


def agent_of(row: Row[Any]) -> DeploymentAgent | None:
    """The agent a deployment row was created for; None: created by name."""
    if row.agent_id is None or row.agent_environment is None:
        return None
    return DeploymentAgent(
        agent_id=row.agent_id, environment=AgentEnvironment(row.agent_environment)
    )


def agent_filtered(
    query: Any, agent_id: str | None, agent_environment: AgentEnvironment | None
) -> Any:
    """GET /v2/deployments' `agent_id` and `agent_environment`, each exact."""
    if agent_id is not None:
        query = query.where(deployments.c.agent_id == agent_id)
    if agent_environment is not None:
        query = query.where(deployments.c.agent_environment == agent_environment.value)
    return query
