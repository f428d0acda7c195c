"""Shared set-up of the data-plane tests: a listener, deployments on it, and a manual
clock that drives the emulator's pipeline and the agent's heartbeats."""

from __future__ import annotations

import time
import uuid
from typing import Any

import httpx
import pytest
from _controlplane_harness import image_body
from fastapi import FastAPI

from deployplane.emulator.store import agents

STEP = 3600.0  # the harness's step: each manual advance goes one step further


async def make_listener(api: httpx.AsyncClient, compute_id: str = "cluster-1") -> str:
    body = {
        "compute_type": "k8s",
        "compute_id": compute_id,
        "compute_config": {"k8s_namespaces": ["agents"]},
    }
    response = await api.post("/v2/listeners", json=body)
    assert response.status_code == 201, response.text
    listener_id: str = response.json()["id"]
    return listener_id


async def make_deployment(
    api: httpx.AsyncClient, listener_id: str, body: dict[str, Any] | None = None
) -> dict[str, Any]:
    body = body or image_body()
    body["source_config"] = {**body.get("source_config", {}), "listener_id": listener_id}
    response = await api.post("/v2/deployments", json=body)
    assert response.status_code == 201, response.text
    created: dict[str, Any] = response.json()
    return created


class Clock:
    """Manual time for the pipeline and the heartbeats."""

    def __init__(self, app: FastAPI) -> None:
        self.app = app
        self.now = time.time()
        workspaces = app.state.settings.config.workspaces
        self.workspace = next(w for w in workspaces if w.name == "team-a")

    async def beat(self, listener_id: str) -> None:
        """What a heartbeat call records, at this clock's time rather than the real one."""
        async with self.app.state.db.write() as conn:
            await agents.heartbeat(
                conn=conn,
                workspace=self.workspace,
                listener_id=uuid.UUID(listener_id),
                now=self.now,
            )

    async def step(self, times: int = 1, *, beating: str | None = None) -> None:
        """Moves time one pipeline step on (per time), beating first if asked."""
        for _ in range(times):
            # From the real time at least: revisions are due a step after their creation.
            self.now = max(self.now, time.time()) + STEP
            if beating is not None:
                await self.beat(beating)
            await self.app.state.pipeline.advance_due(now=self.now)


@pytest.fixture
def clock(emulator: tuple[FastAPI, httpx.AsyncClient]) -> Clock:
    return Clock(emulator[0])
