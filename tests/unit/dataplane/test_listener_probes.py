"""The listener agent's two probes (`deployplane.dataplane.probes`): alive and ready
before it runs (waiting for its Listener's id) and while it runs; a lost apiserver makes
it unready, never dead; a heartbeat task that ended makes it dead. Served over HTTP as
the chart's kubelet asks them."""

from __future__ import annotations

import asyncio
import socket
import uuid
from typing import Any

import httpx
from tests.support.fakekube import FakeKube

from deployplane.api.dataplane import Heartbeat
from deployplane.api.errors import ControlPlaneError, Unavailable
from deployplane.dataplane.agent import Agent, AgentSettings
from deployplane.dataplane.probes import AgentProbes
from deployplane.kube.health import FailureClock
from deployplane.serving import probes
from deployplane.serving.config import Endpoint

LISTENER = uuid.UUID("d3910ba1-0000-4000-8000-000000000001")


class Client:
    """The control plane as the agent's loop sees it: heartbeats answered until
    `beats_left` runs out, then `then` raised (by default an error the heartbeat does not
    expect); every round refused (the loop logs it and goes on)."""

    def __init__(self, beats_left: int = 1_000, then: Exception | None = None) -> None:
        self.beats_left = beats_left
        self.then = then or RuntimeError("unexpected answer")
        self.refused = 0

    async def heartbeat(self, listener_id: uuid.UUID) -> Heartbeat:
        if self.beats_left == 0:
            self.refused += 1
            raise self.then
        self.beats_left -= 1
        return Heartbeat(listener_id=listener_id, ttl_seconds=0.03)

    async def get_listener(self, listener_id: uuid.UUID) -> Any:
        raise ControlPlaneError("no rounds in this test", status_code=503)


def agent_probes(kube: FakeKube) -> AgentProbes:
    """The readiness `AgentProbes.build` makes, over `kube` and no control plane."""
    ready, _ = probes.build_readiness(FailureClock(), probes.ask_apiserver(kube), None, 60.0)
    ready.kubernetes.recheck = 0  # every check asks again
    return AgentProbes(ready)


def agent(client: Client) -> Agent:
    settings = AgentSettings(poll_interval=0.01)
    return Agent(client=client, cluster=None, listener_id=LISTENER, settings=settings)  # type: ignore[arg-type]


async def _until(what: str, done: Any) -> None:
    for _ in range(200):
        if done():
            return
        await asyncio.sleep(0.01)
    raise AssertionError(what)


def test_alive_and_ready_from_the_start_unready_only_while_the_apiserver_is_away() -> None:
    async def scenario() -> list[tuple[bool, dict[str, Any]]]:
        kube = FakeKube()
        checks = agent_probes(kube)
        found = [await checks.alive(), await checks.ready()]  # no listener id yet
        client = Client()
        checks.agent = agent(client)
        running = asyncio.create_task(checks.agent.run())
        try:
            await _until("a heartbeat after the first", lambda: client.beats_left < 999)
            found += [await checks.alive(), await checks.ready()]
            kube.apiserver_away = "[-]etcd failed"
            found += [await checks.alive(), await checks.ready()]
            kube.apiserver_away = None
            found.append(await checks.ready())
        finally:
            running.cancel()
        return found

    assert asyncio.run(scenario()) == [
        (True, {}),
        (True, {}),
        (True, {}),
        (True, {}),
        (True, {}),
        (False, {"kubernetes": "GET /readyz: 500 [-]etcd failed"}),
        (True, {}),
    ]


def test_a_heartbeat_that_ended_makes_the_agent_dead() -> None:
    async def scenario() -> tuple[bool, dict[str, Any]]:
        checks = agent_probes(FakeKube())
        checks.agent = agent(Client(beats_left=2))  # the first beat, and one more
        running = asyncio.create_task(checks.agent.run())
        try:
            await _until("the heartbeat to end", lambda: checks.agent and checks.agent.stalled())
            return await checks.alive()
        finally:
            running.cancel()

    alive = asyncio.run(scenario())
    assert alive == (False, {"stuck": "the heartbeat ended: RuntimeError('unexpected answer')"})


def test_a_control_plane_that_does_not_answer_the_heartbeat_leaves_the_agent_alive() -> None:
    async def scenario() -> tuple[bool, dict[str, Any]]:
        checks = agent_probes(FakeKube())
        client = Client(beats_left=1, then=Unavailable("POST /heartbeat: connection failed"))
        checks.agent = agent(client)
        running = asyncio.create_task(checks.agent.run())
        try:
            await _until("three heartbeats refused", lambda: client.refused >= 3)
            return await checks.alive()
        finally:
            running.cancel()

    assert asyncio.run(scenario()) == (True, {})


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_both_probes_are_served_on_their_own_endpoints_and_closed() -> None:
    async def scenario() -> list[tuple[int, Any]]:
        live = Endpoint.parse(f"http://127.0.0.1:{_free_port()}/healthz", "--liveness")
        ready = Endpoint.parse(f"http://127.0.0.1:{_free_port()}/readyz", "--readiness")
        kube = FakeKube()
        kube.apiserver_away = "[-]etcd failed"
        checks = agent_probes(kube)
        await checks.serve(live, ready)
        answers = []
        try:
            async with httpx.AsyncClient() as http:
                for endpoint in (live, ready):
                    got = await http.get(f"http://127.0.0.1:{endpoint.port}{endpoint.path}")
                    answers.append((got.status_code, got.json()))
        finally:
            await checks.aclose()
        async with httpx.AsyncClient() as http:
            try:
                await http.get(f"http://127.0.0.1:{live.port}/healthz")
            except httpx.ConnectError:
                answers.append((0, "closed"))
        return answers

    away = {"kubernetes": "GET /readyz: 500 [-]etcd failed"}
    assert asyncio.run(scenario()) == [(200, {}), (503, away), (0, "closed")]
