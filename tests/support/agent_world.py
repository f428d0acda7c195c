"""Shared set-up of the data-plane integration tests: a listener, deployments on it, a
manual clock that drives the emulator's pipeline and the agent's heartbeats, and `World`:
the emulator in process, a listener with its agent, and the agent's in-memory cluster.

A test module takes the fixtures (`clock`, `dp_client`, `world`) by importing them by
name, with `emulator` and `api` of tests/support/emulator_app.py they depend on."""

from __future__ import annotations

import time
import uuid
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from tests.support.emulator_app import KEY_A, image_body
from tests.support.fakecluster import FakeCluster

from deployplane.dataplane.agent import Agent
from deployplane.dataplane.protocol import DataPlaneClient
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


@pytest.fixture
async def dp_client(emulator: tuple[FastAPI, httpx.AsyncClient]) -> AsyncIterator[DataPlaneClient]:
    transport = httpx.ASGITransport(app=emulator[0])
    async with DataPlaneClient("http://emulator", api_key=KEY_A, transport=transport) as client:
        yield client


class World:
    """The emulator, a listener with its agent, and the agent's cluster."""

    def __init__(self, api: httpx.AsyncClient, clock: Clock, client: DataPlaneClient) -> None:
        self.api = api
        self.clock = clock
        self.client = client
        self.cluster = FakeCluster()
        self.listener_id = ""
        self.agent: Agent

    async def start(self) -> World:
        self.listener_id = await make_listener(self.api)
        self.agent = self.new_agent()
        await self.client.heartbeat(self.listener_id)
        return self

    def new_agent(self) -> Agent:
        """A fresh agent process: nothing carried over but the cluster."""
        return Agent(
            client=self.client, cluster=self.cluster, listener_id=uuid.UUID(self.listener_id)
        )

    async def deploy(self, body: dict[str, Any] | None = None) -> dict[str, Any]:
        deployment = await make_deployment(self.api, self.listener_id, body)
        await self.clock.step(2, beating=self.listener_id)  # CREATING -> AWAITING_DEPLOY
        return deployment

    async def revision_status(self, deployment: dict[str, Any]) -> str:
        current = (await self.api.get(f"/v2/deployments/{deployment['id']}")).json()
        path = f"/v2/deployments/{deployment['id']}/revisions/{current['latest_revision_id']}"
        status: str = (await self.api.get(path)).json()["status"]
        return status

    async def deployment(self, deployment: dict[str, Any]) -> dict[str, Any]:
        got: dict[str, Any] = (await self.api.get(f"/v2/deployments/{deployment['id']}")).json()
        return got


@pytest.fixture
async def world(api: httpx.AsyncClient, clock: Clock, dp_client: DataPlaneClient) -> World:
    return await World(api, clock, dp_client).start()
