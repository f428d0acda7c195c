"""Ready tells the truth (issue 35, item 2): an AgentDeployment is Ready at generation N
only once what runs reflects it. A change that makes no revision (its resources) waits,
Reconciling, until the published `remote_reconciled=false` filter no longer lists the
deployment; a change that makes one waits for the revision. The emulator's pipeline
is moved by hand here (long steps), so every state in between is seen.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from tests.support.emulator_app import make_settings, running_app
from tests.support.fakekube import FakeKube
from tests.support.reconcile_harness import Harness, condition, cr, docker_spec

from deployplane.reconcile.passes import PassRunner
from deployplane.reconcile.resourcestate import ResourceState

STEP = 3600.0


# Only a deployment's first revision fails: a retry that a fix makes gets past it.
FAILURES = [
    {"name_regex": "^failing-build", "first_revisions": 1, "status": "BUILD_FAILED"},
    {"name_regex": "^failing-deploy", "first_revisions": 1, "status": "DEPLOY_FAILED"},
]


@pytest.fixture
async def world(tmp_path: Path) -> AsyncIterator[tuple[Harness, FastAPI]]:
    settings = make_settings(tmp_path, step_seconds=STEP, pipeline={"failures": FAILURES})
    async with running_app(settings) as (app, http):
        harness = Harness(http=http, kube=FakeKube(), transport=httpx.ASGITransport(app=app))
        yield harness, app


class Clock:
    def __init__(self, app: FastAPI) -> None:
        self.app, self.now = app, time.time()

    async def step(self, times: int = 1) -> None:
        for _ in range(times):
            self.now = max(self.now, time.time()) + STEP
            await self.app.state.pipeline.advance_due(now=self.now)


async def one_pass(
    runner: PassRunner[Any, Any], body: dict[str, Any], state: ResourceState, h: Harness
) -> dict[str, Any]:
    await runner.one_pass(body, state, post_event=h.events.append)
    assert state.status is not None
    return state.status


def conditions(status: dict[str, Any]) -> dict[str, tuple[str, str, int]]:
    return {
        c["type"]: (c["status"], c.get("reason", ""), c.get("observedGeneration", 0))
        for c in status["conditions"]
    }


async def ready(
    runner: PassRunner[Any, Any],
    body: dict[str, Any],
    state: ResourceState,
    h: Harness,
    clock: Clock,
) -> dict[str, Any]:
    status = await one_pass(runner, body, state, h)
    await clock.step(4)
    status = await one_pass(runner, body, state, h)
    assert condition(state, "Ready")["status"] == "True", status
    return status


def with_max_scale(body: dict[str, Any], max_scale: int) -> None:
    spec = body["spec"]["sourceConfig"]["resourceSpec"]
    spec["maxScale"] = max_scale
    body["metadata"]["generation"] += 1


async def test_a_change_without_a_revision_is_ready_only_once_the_data_plane_applied_it(
    world: tuple[Harness, FastAPI],
) -> None:
    h, app = world
    clock = Clock(app)
    deployments, _ = h.runners()
    body, state = cr("scale", docker_spec()), ResourceState()
    state.status = {}
    first = await ready(deployments, body, state, h, clock)

    with_max_scale(body, 5)
    status = await one_pass(deployments, body, state, h)
    assert status["latestRevisionId"] == first["latestRevisionId"]  # no revision
    assert conditions(status)["Ready"][0] == "False"
    assert conditions(status)["Reconciling"] == ("True", "AwaitingDataPlane", 2)
    message = condition(state, "Reconciling")["message"]
    assert message == "waiting for the listener to apply the change (remote_reconciled=false)"
    assert status["observedGeneration"] == 2
    assert status["awaitingDataPlane"] is True

    # The data plane has not applied it: a poll still waits (and asks the filter).
    calls = len(h.calls)
    status = await one_pass(deployments, body, state, h)
    assert conditions(status)["Reconciling"][1] == "AwaitingDataPlane"
    listed = [c for c in h.calls[calls:] if c[:2] == ("GET", "/v2/deployments")]
    assert len(listed) == 1

    await clock.step()  # the (simulated) data plane re-renders: reconciled again
    status = await one_pass(deployments, body, state, h)
    assert conditions(status)["Ready"] == ("True", "Deployed", 2)
    assert "Reconciling" not in conditions(status)
    assert "awaitingDataPlane" not in status

    # Settled: a resync is one GET again, no list.
    calls = len(h.calls)
    state.history.last_full = float("-inf")
    await one_pass(deployments, body, state, h)
    assert len(h.calls) - calls == 1


async def test_a_change_with_a_revision_is_ready_once_the_revision_deployed(
    world: tuple[Harness, FastAPI],
) -> None:
    h, app = world
    clock = Clock(app)
    deployments, _ = h.runners()
    body, state = cr("image", docker_spec()), ResourceState()
    state.status = {}
    first = await ready(deployments, body, state, h, clock)

    body["spec"]["sourceRevisionConfig"]["imageUri"] = "registry.example.com/agent:2"
    body["metadata"]["generation"] = 2
    status = await one_pass(deployments, body, state, h)
    assert status["latestRevisionId"] != first["latestRevisionId"]
    assert conditions(status)["Ready"][0] == "False"
    assert conditions(status)["Reconciling"][0] == "True"
    assert "awaitingDataPlane" not in status
    await clock.step(4)
    status = await one_pass(deployments, body, state, h)
    assert conditions(status)["Ready"] == ("True", "Deployed", 2)
    assert [c for c in h.calls if c[:2] == ("GET", "/v2/deployments")] == []


async def test_a_service_that_never_marks_the_deployment_gives_ready_at_the_first_poll(
    world: tuple[Harness, FastAPI],
) -> None:
    """Degrading safely: a change the data plane does not mark (here a URL, which it
    does not render) waits one poll, whose read finds it reconciled."""
    h, app = world
    clock = Clock(app)
    deployments, _ = h.runners()
    body, state = cr("url", docker_spec()), ResourceState()
    state.status = {}
    await ready(deployments, body, state, h, clock)
    body["spec"]["sourceConfig"]["customUrl"] = "https://agent.example.com"
    body["metadata"]["generation"] = 2
    status = await one_pass(deployments, body, state, h)
    assert conditions(status)["Reconciling"][1] == "AwaitingDataPlane"
    status = await one_pass(deployments, body, state, h)
    assert conditions(status)["Ready"] == ("True", "Deployed", 2)


def events(h: Harness) -> list[tuple[str, str]]:
    return [(e.reason, e.message) for e in h.events]


def messages(status: dict[str, Any]) -> list[str]:
    return [c.get("message", "") for c in status["conditions"]]


async def revision_statuses(h: Harness, status: dict[str, Any]) -> list[str]:
    """Newest first."""
    page = await h.http.get(f"/v2/deployments/{status['deploymentId']}/revisions")
    return [r["status"] for r in page.json()["resources"]]


@pytest.mark.parametrize(
    ("name", "steps", "failed"),
    [
        ("failing-deploy", 4, "DEPLOY_FAILED"),
        ("failing-build", 2, "BUILD_FAILED"),
    ],
)
async def test_a_failed_rollout_recovers_when_the_resources_are_fixed(
    world: tuple[Harness, FastAPI], name: str, steps: int, failed: str
) -> None:
    """The failure is Stalled and says what comes next; a change of resourceSpec alone
    (no image change) rolls a new revision, which is Ready at the new generation. The
    condition never asks for the change already made; one Deployed Event per revision."""
    h, app = world
    clock = Clock(app)
    deployments, _ = h.runners()
    body, state = cr(name, docker_spec()), ResourceState()
    state.status = {}
    first = await one_pass(deployments, body, state, h)
    await clock.step(steps)
    status = await one_pass(deployments, body, state, h)
    assert conditions(status)["Stalled"][:2] == ("True", failed.title().replace("_", ""))
    stalled = condition(state, "Stalled")["message"]
    assert stalled.startswith(f"Revision {first['latestRevisionId']} ended {failed}; ")
    assert "the next change of the spec rolls a new revision" in stalled

    with_max_scale(body, 3)
    status = await one_pass(deployments, body, state, h)
    retry = status["latestRevisionId"]
    assert retry != first["latestRevisionId"]
    assert "Stalled" not in conditions(status)
    assert conditions(status)["Reconciling"][2] == 2
    assert not any(first["latestRevisionId"] in m for m in messages(status))
    await clock.step(4)
    status = await one_pass(deployments, body, state, h)
    assert conditions(status)["Ready"] == ("True", "Deployed", 2)
    assert status["revision"]["imageUri"] == "registry.example.com/agent:1"  # no image change
    assert await revision_statuses(h, status) == ["DEPLOYED", failed]
    assert ("Updated", "Applied the change to sourceConfig.resourceSpec") in events(h)
    deployed = [message for reason, message in events(h) if reason == "Deployed"]
    assert deployed == [f"Revision {retry} is deployed"]


@pytest.mark.parametrize(
    ("steps", "superseded"), [(1, "SKIPPED"), (3, "INTERRUPTED")], ids=["QUEUED", "DEPLOYING"]
)
async def test_a_change_while_a_revision_is_on_its_way_rolls_one_that_carries_it(
    world: tuple[Harness, FastAPI], steps: int, superseded: str
) -> None:
    """Whatever a service does with a change landing on a revision in flight (not
    published), the operator's PATCH carries the image too: a new revision, rendered
    from the changed deployment, supersedes the one on its way."""
    h, app = world
    clock = Clock(app)
    deployments, _ = h.runners()
    body, state = cr("in-flight", docker_spec()), ResourceState()
    state.status = {}
    first = await one_pass(deployments, body, state, h)
    await clock.step(steps)
    with_max_scale(body, 3)
    status = await one_pass(deployments, body, state, h)
    assert status["latestRevisionId"] != first["latestRevisionId"]
    await clock.step(4)
    status = await one_pass(deployments, body, state, h)
    assert conditions(status)["Ready"] == ("True", "Deployed", 2)
    assert await revision_statuses(h, status) == ["DEPLOYED", superseded]


async def test_one_deployed_event_per_revision_and_the_change_applied_once(
    world: tuple[Harness, FastAPI],
) -> None:
    """A change without a revision ends Ready at the new generation; its Event says the
    change runs, not a second Deployed of the revision that was deployed already."""
    h, app = world
    clock = Clock(app)
    deployments, _ = h.runners()
    body, state = cr("evented", docker_spec()), ResourceState()
    state.status = {}
    first = await ready(deployments, body, state, h, clock)
    revision = first["latestRevisionId"]
    with_max_scale(body, 5)
    await one_pass(deployments, body, state, h)
    await clock.step()
    status = await one_pass(deployments, body, state, h)
    assert conditions(status)["Ready"] == ("True", "Deployed", 2)
    assert [e for e in events(h) if e[0] in ("Deployed", "ChangeApplied", "Updated")] == [
        ("Deployed", f"Revision {revision} is deployed"),
        ("Updated", "Applied the change to sourceConfig.resourceSpec"),
        ("ChangeApplied", f"Revision {revision} runs the change: the data plane applied it"),
    ]


async def test_a_change_made_on_the_control_plane_is_corrected_as_drift(
    world: tuple[Harness, FastAPI],
) -> None:
    h, app = world
    clock = Clock(app)
    deployments, _ = h.runners()
    body, state = cr("drifted", docker_spec()), ResourceState()
    state.status = {}
    status = await ready(deployments, body, state, h, clock)
    response = await h.http.patch(
        f"/v2/deployments/{status['deploymentId']}",
        json={"source_config": {"resource_spec": {"min_scale": 3}}},
    )
    assert response.status_code == 200, response.text
    state.history.last_full = float("-inf")  # the resync
    await one_pass(deployments, body, state, h)
    assert events(h)[-1] == (
        "DriftCorrected",
        "Corrected drift of sourceConfig.resourceSpec: changed on the control plane",
    )
