"""`deployplane plan` against the operator it predicts, with the emulator in process.

For every change kind: the plan of a manifest (its row, the requests it made), then the
manifest applied and the operator's passes run to rest, then what the control plane
did (creates, PATCHes, new revisions) compared with the row. The plan's requests are
reads only, to both APIs; applying does exactly what the row said. Kubernetes is the
in-memory `PlanCluster` over the `FakeKube` the passes write to: one cluster for both.
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.support.emulator_app import INTEGRATION_A, KEY_A, make_settings, running_app
from tests.support.fakekube import FakeKube
from tests.support.plancluster import PlanCluster

from deployplane.api.client import ControlPlaneClient
from deployplane.cli.commands.plan import planner, readonly
from deployplane.cli.commands.plan.manifests import Manifest, Manifests, sort_documents
from deployplane.cli.commands.plan.rows import HELD, REFUSED, Row, exit_code
from deployplane.externals.bindings import BINDINGS
from deployplane.externals.connections import Connection, Connections
from deployplane.kinds import KINDS
from deployplane.reconcile.approval import APPROVED_GENERATION_ANNOTATION
from deployplane.reconcile.outcome import EventRecord
from deployplane.reconcile.passes import PassRunner
from deployplane.reconcile.resourcestate import ResourceState
from deployplane.reconcile.schedule import Schedule

NS = "team-a"
EMULATOR = Connection("http://emulator", KEY_A)
SECRET_VALUE = "sk-plan-planted-value-71c0"
PLURALS = {kind.kind: kind.plural for kind in KINDS}


class Counting(httpx.AsyncBaseTransport):
    """The emulator's transport, recording every request (method, path)."""

    def __init__(self, inner: httpx.AsyncBaseTransport) -> None:
        self.inner = inner
        self.calls: list[tuple[str, str]] = []

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        self.calls.append((request.method, request.url.path))
        return await self.inner.handle_async_request(request)


@dataclass
class World:
    """The control plane (emulator), the cluster, and the operator's passes over them."""

    http: httpx.AsyncClient
    transport: Counting
    kube: FakeKube = field(default_factory=FakeKube)
    states: dict[tuple[str, str], ResourceState] = field(default_factory=dict)
    events: list[EventRecord] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.cluster = PlanCluster(self.kube)

    def client(self, conn: Connection) -> ControlPlaneClient:
        return ControlPlaneClient(conn.url, api_key=conn.api_key, transport=self.transport)

    def runner(self, kind: str) -> PassRunner[Any, Any]:
        connections = Connections(EMULATOR, self.kube, factory=self.client)
        definition = KINDS[kind]
        return PassRunner(
            BINDINGS.reconciler(definition, connections, self.kube, Schedule(resync=600.0)),
            definition.spec_model,
            definition.plural,
            self.kube,
            status_model=definition.status_model,
        )

    async def apply(self, *documents: dict[str, Any]) -> None:
        """What `kubectl apply` and then the operator do: each object stored as the
        apiserver makes it, and its passes run until it settles."""
        manifests = self.manifests(*documents)
        for secret, data in manifests.secrets.items():
            self.kube.put_secret(*secret, data)
        for manifest in manifests:
            plural = PLURALS[manifest.kind]
            dry = self.cluster.dry_run(plural, manifest)
            assert dry.body is not None, dry.refusal
            self.cluster.store(plural, dry.body)
            await self.settle(manifest.kind, manifest.name)

    async def settle(self, kind: str, name: str) -> None:
        runner, state = self.runner(kind), self.states.setdefault((kind, name), ResourceState())
        for _ in range(100):
            body = self.cluster.live(PLURALS[kind], NS, name)
            assert body is not None
            await runner.one_pass(body, state, post_event=self.events.append)
            if state.history.attempt == 0:
                return
            await asyncio.sleep(0.02)  # the emulator's pipeline moves on
        raise AssertionError(f"{kind}/{name} did not settle: {state.status}")

    def manifests(self, *documents: dict[str, Any]) -> Manifests:
        return sort_documents(list(copy.deepcopy(documents)), NS, PLURALS)

    async def plan(self, *documents: dict[str, Any], prune: bool = False) -> list[Row]:
        made = planner.Planner(self.cluster, self.manifests(*documents), KINDS, EMULATOR)
        return await planner.plan(made, prune=prune, namespaces=[NS])

    async def revisions(self, name: str) -> int:
        status = self.kube.statuses.get((NS, "agentdeployments", name)) or {}
        if not status.get("deploymentId"):
            return 0
        answer = await self.http.get(f"/v2/deployments/{status['deploymentId']}/revisions")
        assert answer.status_code == 200, answer.text
        return len(answer.json()["resources"])


@pytest.fixture
async def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[World]:
    settings = make_settings(
        tmp_path,
        step_seconds=0.0,
        pipeline={"failures": [{"image_uri_regex": ".*:broken$", "status": "DEPLOY_FAILED"}]},
    )
    async with running_app(settings) as (app, http):
        made = World(http, Counting(httpx.ASGITransport(app=app)))
        monkeypatch.setattr(readonly, "transport_for", lambda _settings: made.transport)
        yield made


def agd(name: str, spec: dict[str, Any], **meta: Any) -> dict[str, Any]:
    return {
        "apiVersion": "deployplane.io/v1alpha1",
        "kind": "AgentDeployment",
        "metadata": {"name": name, "namespace": NS, **meta},
        "spec": spec,
    }


def docker(image: str = "registry.example.com/agent:1", **extra: Any) -> dict[str, Any]:
    return {
        "source": "external_docker",
        "sourceConfig": {"resourceSpec": {"minScale": 1, "memoryMb": 512}},
        "sourceRevisionConfig": {"imageUri": image},
        **extra,
    }


def git(ref: str = "main", graph: str = "langgraph.json") -> dict[str, Any]:
    return {
        "source": "git_host",
        "sourceConfig": {
            "integrationId": str(INTEGRATION_A),
            "repository": {"owner": "acme", "name": "support-bot"},
        },
        "sourceRevisionConfig": {"repoRef": ref, "graphConfigPath": graph},
    }


def secret(name: str, **data: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name}, "stringData": data}


KEYED = [{"name": "OPENAI_API_KEY", "valueFrom": {"secretKeyRef": {"name": "keys", "key": "k"}}}]


@dataclass(frozen=True)
class Effect:
    """What applying did on the control plane."""

    creates: int
    patches: int
    new_revisions: int


EFFECT_OF = {
    "create": Effect(1, 0, 1),
    "new-revision": Effect(0, 1, 1),
    "rebuild": Effect(0, 1, 1),
    "update": Effect(0, 1, 0),
    "none": Effect(0, 0, 0),
}
"""What each row promises applying does."""


async def planned_then_applied(
    world: World, name: str, *documents: dict[str, Any]
) -> tuple[Row, Effect]:
    """The plan of `documents` (one row for `name`), with proof that it wrote nothing;
    then the documents applied, and what the control plane did."""
    before = await world.revisions(name)
    calls, writes = len(world.transport.calls), len(world.kube.writes + world.kube.object_writes)
    rows = await world.plan(*documents)
    [row] = [r for r in rows if r.name == name]
    sent = world.transport.calls[calls:]
    assert {method for method, _ in sent} <= {"GET"}, sent
    if before:  # it looked at the deployment, as a pass does
        assert any(path.startswith("/v2/deployments/") for _, path in sent), sent
    assert len(world.kube.writes + world.kube.object_writes) == writes
    kinds = {request[0] for request in world.cluster.requests}
    assert kinds <= {"get", "list", "dry-run"}
    start = len(world.transport.calls)
    await world.apply(*documents)
    done = world.transport.calls[start:]
    effect = Effect(
        creates=sum(1 for m, p in done if m == "POST" and p == "/v2/deployments"),
        patches=sum(1 for m, _ in done if m == "PATCH"),
        new_revisions=await world.revisions(name) - before,
    )
    return row, effect


Scenario = tuple[
    list[dict[str, Any]], list[dict[str, Any]], tuple[str, tuple[str, ...], tuple[str, ...]]
]
SCENARIOS: dict[str, Scenario] = {
    "a new resource: create": (
        [],
        [agd("a", docker())],
        ("create", (), ()),
    ),
    "unchanged: none": (
        [agd("a", docker())],
        [agd("a", docker())],
        ("none", (), ()),
    ),
    "a new image: new-revision (image)": (
        [agd("a", docker())],
        [agd("a", docker("registry.example.com/agent:2"))],
        ("new-revision", ("image",), ("sourceRevisionConfig.imageUri",)),
    ),
    "resources: update, no revision": (
        [agd("a", docker())],
        [agd("a", docker(sourceConfig={"resourceSpec": {"minScale": 2, "memoryMb": 512}}))],
        ("update", (), ("sourceConfig.resourceSpec",)),
    ),
    "resources while the revision failed: new-revision (config), the image resent": (
        [agd("a", docker("registry.example.com/agent:broken"))],
        [
            agd(
                "a",
                docker(
                    "registry.example.com/agent:broken",
                    sourceConfig={"resourceSpec": {"minScale": 2, "memoryMb": 512}},
                ),
            )
        ],
        ("new-revision", ("config",), ("sourceConfig.resourceSpec",)),
    ),
    "a Secret of the change rotates a value: new-revision (config)": (
        [secret("keys", k=SECRET_VALUE), agd("a", docker(secrets=KEYED))],
        [secret("keys", k=SECRET_VALUE + "-rotated"), agd("a", docker(secrets=KEYED))],
        ("new-revision", ("config",), ("secrets",)),
    ),
    "git: a new ref: new-revision (source)": (
        [agd("g", git())],
        [agd("g", git(ref="release"))],
        ("new-revision", ("source",), ("sourceRevisionConfig.repoRef",)),
    ),
    "git: a new graph path: rebuild (config)": (
        [agd("g", git())],
        [agd("g", git(graph="graphs/langgraph.json"))],
        ("rebuild", ("config",), ("sourceRevisionConfig.graphConfigPath",)),
    ),
    "git: unchanged: none": (
        [agd("g", git())],
        [agd("g", git())],
        ("none", (), ()),
    ),
}


@pytest.mark.parametrize(("before", "change", "want"), SCENARIOS.values(), ids=SCENARIOS.keys())
async def test_the_plan_is_what_applying_does(
    world: World,
    before: list[dict[str, Any]],
    change: list[dict[str, Any]],
    want: tuple[str, tuple[str, ...], tuple[str, ...]],
) -> None:
    await world.apply(*before)
    name = next(d["metadata"]["name"] for d in change if d["kind"] == "AgentDeployment")
    row, effect = await planned_then_applied(world, name, *change)
    assert (row.action, row.reasons, row.fields) == want
    assert effect == EFFECT_OF[row.action]
    assert SECRET_VALUE not in repr(row)


async def test_a_manual_change_is_planned_held_by_the_operator_and_sent_once_approved(
    world: World,
) -> None:
    manual = {"updatePolicy": "Manual"}
    await world.apply(agd("m", docker(**manual), annotations={APPROVED_GENERATION_ANNOTATION: "1"}))
    assert await world.revisions("m") == 1
    edited = agd("m", docker("registry.example.com/agent:2", **manual))

    row, effect = await planned_then_applied(world, "m", edited)
    assert (row.action, row.reasons) == ("new-revision", ("image", HELD))
    assert effect == Effect(0, 0, 0)  # applied, held: nothing sent
    status = world.kube.statuses[(NS, "agentdeployments", "m")]
    assert status["pendingChange"] == {
        "generation": 2,
        "action": "new-revision",
        "reasons": ["image"],
        "fields": ["sourceRevisionConfig.imageUri"],
    }

    approved = agd(
        "m",
        docker("registry.example.com/agent:2", **manual),
        annotations={APPROVED_GENERATION_ANNOTATION: "2"},
    )
    row, effect = await planned_then_applied(world, "m", approved)
    assert (row.action, row.reasons) == ("new-revision", ("image",))
    assert effect == EFFECT_OF["new-revision"]
    assert "pendingChange" not in world.kube.statuses[(NS, "agentdeployments", "m")]


async def test_a_listener_is_created_then_updated_as_planned(world: World) -> None:
    def listener(version: str) -> dict[str, Any]:
        return {
            "apiVersion": "deployplane.io/v1alpha1",
            "kind": "Listener",
            "metadata": {"name": "edge"},
            "spec": {"computeType": "k8s", "computeId": "c-plan", "version": version},
        }

    [row] = await world.plan(listener("1"))
    assert (row.kind, row.action) == ("Listener", "create")
    await world.apply(listener("1"))
    [row] = await world.plan(listener("2"))
    assert (row.action, row.fields) == ("update", ("version",))
    [row] = await world.plan(listener("1"))
    assert row.action == "none"


async def test_a_deployment_on_a_listener_of_the_same_change_waits_for_it(world: World) -> None:
    spec = docker()
    spec["sourceConfig"]["listenerRef"] = {"name": "edge"}
    listener = {
        "apiVersion": "deployplane.io/v1alpha1",
        "kind": "Listener",
        "metadata": {"name": "edge"},
        "spec": {"computeType": "k8s", "computeId": "c-same-change"},
    }
    rows = await world.plan(listener, agd("on-edge", spec))
    assert [(r.kind, r.action, r.reasons) for r in rows] == [
        ("Listener", "create", ()),
        ("AgentDeployment", "create", ("waits for: Listener edge has no listenerId yet",)),
    ]


async def test_a_refusal_is_a_row_field_by_field_and_exits_1(world: World) -> None:
    world.cluster.refusals[("agentdeployments", NS, "bad")] = {
        "kind": "Status",
        "status": "Failure",
        "reason": "Invalid",
        "message": 'AgentDeployment.deployplane.io "bad" is invalid: ...',
        "details": {
            "causes": [
                {
                    "reason": "FieldValueInvalid",
                    "message": 'Invalid value: "object": spec.sourceConfig.resourceSpec: '
                    "minScale above maxScale",
                    "field": "spec.sourceConfig.resourceSpec",
                }
            ]
        },
    }
    rows = await world.plan(agd("bad", docker()), agd("good", docker()))
    assert [(r.name, r.action) for r in rows] == [("bad", REFUSED), ("good", "create")]
    assert rows[0].fields == ("spec.sourceConfig.resourceSpec",)
    assert "minScale above maxScale" in rows[0].reasons[0]
    assert exit_code(rows) == 1
    assert exit_code(rows[1:]) == 2
    assert exit_code([]) == 0


DELETES = "deletes its deployment on the control plane (deletionPolicy Delete)"


async def test_prune_plans_deletions_as_their_policies_say(world: World) -> None:
    await world.apply(
        agd("kept", docker()),
        agd("gone", docker()),
        agd("orphaned", docker(deletionPolicy="Orphan")),
    )
    calls = len(world.transport.calls)
    rows = await world.plan(agd("kept", docker()), prune=True)
    assert [(r.name, r.action, r.reasons) for r in rows] == [
        ("kept", "none", ()),
        (
            "gone",
            "delete",
            ("deletes its deployment on the control plane (deletionPolicy Delete)",),
        ),
        ("orphaned", "delete", ("its deployment stays on the control plane (Orphan)",)),
    ]
    assert {m for m, _ in world.transport.calls[calls:]} == {"GET"}
    without = await world.plan(agd("kept", docker()))
    assert [r.name for r in without] == ["kept"]


def test_manifests_take_the_namespace_given_unless_they_name_one() -> None:
    documents = [agd("a", docker()), {**agd("b", docker()), "metadata": {"name": "b"}}]
    made = sort_documents(documents, "elsewhere", PLURALS)
    assert [(m.namespace, m.name) for m in made] == [(NS, "a"), ("elsewhere", "b")]
    assert isinstance(made.resources[0], Manifest)
