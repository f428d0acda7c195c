"""The operator's passes against the emulator app in process, Kubernetes faked
(`FakeKube`): `Harness` (the `harness` fixture) holds the emulator's client and the
runners of both kinds, with every call the operator made; `cr` and `docker_spec` make
the custom resources, `settle` runs passes until the outcome is settled.

Shared by test_operator_reconcile, test_operator_rollout and test_export_adoption; a
test module takes `harness` by importing it by name."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.support.emulator_app import KEY_A, make_settings, running_app
from tests.support.fakekube import FakeKube

from deployplane.api.client import ControlPlaneClient
from deployplane.externals.agentdeployment import AgentDeploymentConnecter
from deployplane.externals.connections import Connection, Connections
from deployplane.externals.errors import classified
from deployplane.externals.listener import ListenerConnecter
from deployplane.kinds.agentdeployment.spec import AgentDeploymentSpec
from deployplane.kinds.agentdeployment.status import AgentDeploymentStatus
from deployplane.kinds.listener.spec import ListenerSpec
from deployplane.kinds.listener.status import ListenerStatus
from deployplane.reconcile.outcome import EventRecord
from deployplane.reconcile.passes import PassRunner
from deployplane.reconcile.reconciler import Reconciler
from deployplane.reconcile.resourcestate import ResourceState
from deployplane.reconcile.schedule import Schedule

NS = "team-a"


@dataclass
class Harness:
    http: httpx.AsyncClient
    kube: FakeKube
    transport: httpx.ASGITransport
    calls: list[tuple[str, str, int]] = field(default_factory=list)
    events: list[EventRecord] = field(default_factory=list)
    timing: Schedule = field(default_factory=lambda: Schedule(resync=600.0))

    def client_factory(self, conn: Connection) -> ControlPlaneClient:
        return ControlPlaneClient(
            conn.url,
            api_key=conn.api_key,
            transport=self.transport,
            on_response=lambda m, p, s, _t: self.calls.append((m, p, s)),
        )

    def runners(
        self,
    ) -> tuple[
        PassRunner[AgentDeploymentSpec, AgentDeploymentStatus],
        PassRunner[ListenerSpec, ListenerStatus],
    ]:
        connections = Connections(
            Connection("http://emulator", KEY_A), self.kube, factory=self.client_factory
        )
        deployments = PassRunner(
            Reconciler(
                classified(AgentDeploymentConnecter(connections, self.kube)),
                kind="deployment",
                schedule=self.timing,
            ),
            AgentDeploymentSpec,
            "agentdeployments",
            self.kube,
            status_model=AgentDeploymentStatus,
        )
        listeners = PassRunner(
            Reconciler(
                classified(ListenerConnecter(connections)), kind="listener", schedule=self.timing
            ),
            ListenerSpec,
            "listeners",
            self.kube,
            status_model=ListenerStatus,
        )
        return deployments, listeners

    async def deployments_named(self, name: str) -> list[dict[str, Any]]:
        response = await self.http.get("/v2/deployments", params={"name": name})
        assert response.status_code == 200, response.text
        resources: list[dict[str, Any]] = response.json()["resources"]
        return resources


@pytest.fixture
async def harness(tmp_path: Path) -> AsyncIterator[Harness]:
    settings = make_settings(
        tmp_path,
        step_seconds=0.0,
        pipeline={"failures": [{"image_uri_regex": ".*:broken$", "status": "DEPLOY_FAILED"}]},
    )
    async with running_app(settings) as (app, http):
        yield Harness(http=http, kube=FakeKube(), transport=httpx.ASGITransport(app=app))


def cr(name: str, spec: dict[str, Any], generation: int = 1) -> dict[str, Any]:
    return {
        "metadata": {
            "namespace": NS,
            "name": name,
            "uid": str(uuid.uuid4()),
            "generation": generation,
            "resourceVersion": "1",
            "annotations": {},
        },
        "spec": spec,
    }


def docker_spec(image: str = "registry.example.com/agent:1", **extra: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "source": "external_docker",
        "sourceConfig": {"resourceSpec": {"minScale": 1, "memoryMb": 512}},
        "sourceRevisionConfig": {"imageUri": image},
    }
    spec.update(extra)
    return spec


def condition(state: ResourceState, type_: str) -> dict[str, Any]:
    assert state.status is not None
    return next(c for c in state.status.get("conditions", []) if c["type"] == type_)


async def settle(
    runner: PassRunner[Any, Any],
    body: dict[str, Any],
    state: ResourceState,
    h: Harness,
    passes: int = 50,
) -> None:
    """Run passes until the outcome is settled (what the daemon would do, minus waits)."""
    for _ in range(passes):
        await runner.one_pass(body, state, post_event=h.events.append)
        if state.history.attempt == 0:
            return
        await asyncio.sleep(0.02)  # let the emulator's pipeline worker move on
    raise AssertionError(f"did not settle: {state.status}")
