"""The AgentDeployment and Listener external clients against httpx.MockTransport.

A scripted control plane (`FakeApi`: answers by method and path, records every call
and body) and a tiny in-memory `Kube` stand in for the world. Tables of case -> want
cover desired-body resolution, dependency errors, drift (what the PATCH carries), the
call budget of observe, the phase of every revision status, find and delete; then the
Listener client, `Connections` and the secrets digest. No emulator, no Kubernetes.
"""

from __future__ import annotations

import dataclasses
import json
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
from tests.support import apijson

from deployplane.api import errors
from deployplane.api.client import ControlPlaneClient
from deployplane.api.models import RevisionStatus, Secret
from deployplane.externals.agentdeployment import (
    AgentDeploymentConnecter,
    AgentDeploymentExternal,
    secrets_digest,
)
from deployplane.externals.agentdeployment import AgentDeploymentReason as ADReason
from deployplane.externals.agentdeployment.logtail import with_tail
from deployplane.externals.connections import Connection, Connections
from deployplane.externals.listener import ListenerConnecter, ListenerExternal
from deployplane.kinds.agentdeployment.spec import AgentDeploymentSpec
from deployplane.kinds.agentdeployment.status import AgentDeploymentStatus
from deployplane.kinds.common import ConnectionReference
from deployplane.kinds.listener.spec import ListenerSpec
from deployplane.kinds.listener.status import ListenerStatus
from deployplane.reconcile.conditions import Reason
from deployplane.reconcile.external import DependencyNotReady, Managed, Observation, Phase
from deployplane.reconcile.marker import CreatePending
from deployplane.reconcile.status import to_kube

NS = "team-a"
UID = "0b9a4c52-5b1e-4a8e-9d53-1f0c2a3b4c5d"
API_KEY = "lsv2_sk_very-secret-key-0123456789"
DEP = "11111111-1111-4111-8111-111111111111"
REV = "22222222-2222-4222-8222-222222222222"
REV2 = "22222222-2222-4222-8222-222222222223"
LIS = "33333333-3333-4333-8333-333333333333"
INT = "44444444-4444-4444-8444-444444444444"
NOW = "2025-01-02T03:04:05Z"

DEPLOYMENT_PATH = f"/v2/deployments/{DEP}"
REVISION_PATH = f"{DEPLOYMENT_PATH}/revisions/{REV}"
REPOS_PATH = f"/v1/integrations/git_host/{INT}/repos"
LISTENER_PATH = f"/v2/listeners/{LIS}"

GET_DEP = ("GET", DEPLOYMENT_PATH)
GET_REV = ("GET", REVISION_PATH)
PATCH_DEP = ("PATCH", DEPLOYMENT_PATH)
DELETE_DEP = ("DELETE", DEPLOYMENT_PATH)


# ------------------------------------------------------------------ the world


Answer = tuple[int, Any]


@dataclass
class FakeApi:
    """Answers (method, path) with scripted (status, json) answers, in turn; the last
    answer repeats. Unscripted routes are 404. Every call and JSON body is recorded."""

    routes: dict[tuple[str, str], list[Answer]] = field(default_factory=dict)
    calls: list[tuple[str, str]] = field(default_factory=list)
    bodies: list[tuple[str, str, Any]] = field(default_factory=list)
    params: list[dict[str, str]] = field(default_factory=list)

    def on(self, method: str, path: str, *answers: Answer) -> FakeApi:
        self.routes[(method, path)] = list(answers)
        return self

    def handler(self, request: httpx.Request) -> httpx.Response:
        key = (request.method, request.url.path)
        self.calls.append(key)
        self.params.append(dict(request.url.params))
        if request.content:
            self.bodies.append((*key, json.loads(request.content)))
        answers = self.routes.get(key)
        if not answers:
            return httpx.Response(404, json={"detail": f"{request.url.path} not found"})
        status, body = answers.pop(0) if len(answers) > 1 else answers[0]
        return httpx.Response(status, json=body)

    def client(self) -> ControlPlaneClient:
        return ControlPlaneClient(
            "http://control-plane",
            api_key=API_KEY,
            transport=httpx.MockTransport(self.handler),
            max_retries=0,
        )

    def sent(self, method: str) -> list[Any]:
        return [body for m, _, body in self.bodies if m == method]


@dataclass
class Kube:
    """A tiny KubeReader: Secrets and Listener statuses of one namespace."""

    secrets: dict[str, dict[str, str]] = field(default_factory=dict)
    listeners: dict[str, dict[str, Any]] = field(default_factory=dict)

    async def read_secret(self, namespace: str, name: str) -> Mapping[str, str] | None:
        assert namespace == NS
        return self.secrets.get(name)

    async def read_custom_status(
        self, namespace: str, plural: str, name: str
    ) -> Mapping[str, Any] | None:
        assert (namespace, plural) == (NS, "listeners")
        return self.listeners.get(name)


def deployment_json(**over: Any) -> dict[str, Any]:
    """A deployment as the service returns it: unset optionals reported as null."""
    body: dict[str, Any] = {
        "id": DEP,
        "tenant_id": "99999999-9999-4999-8999-999999999999",
        "name": "agent",
        "source": "external_docker",
        "source_config": {
            "integration_id": None,
            "repo_url": None,
            "build_on_push": None,
            "custom_url": None,
            "resource_spec": {"min_scale": 1, "memory_mb": 512, "cpu": None, "labels": None},
            "listener_id": LIS,
            "listener_config": {"k8s_namespace": "agents"},
            "install_command": None,
            "build_command": None,
        },
        "source_revision_config": {
            "repo_ref": None,
            "graph_config_path": None,
            "image_uri": "registry.example.com/agent:1",
            "repo_commit_sha": None,
        },
        "secrets": None,
        "created_at": NOW,
        "updated_at": NOW,
        "status": "READY",
        "latest_revision_id": REV,
        "active_revision_id": REV,
        "image_version": "1",
    }
    body.update(over)
    return body


def revision_json(status: str = "DEPLOYED", rev_id: str = REV, **src: Any) -> dict[str, Any]:
    return {
        "id": rev_id,
        "created_at": NOW,
        "updated_at": NOW,
        "status": status,
        "source": "external_docker",
        "source_revision_config": {"image_uri": "registry.example.com/agent:1", **src},
    }


def docker_spec(**over: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "source": "external_docker",
        "sourceConfig": {
            "listenerId": LIS,
            "resourceSpec": {"minScale": 1, "memoryMb": 512},
            "listenerConfig": {"k8sNamespace": "agents"},
        },
        "sourceRevisionConfig": {"imageUri": "registry.example.com/agent:1"},
    }
    spec.update(over)
    return spec


def git_spec(**over: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "source": "git_host",
        "sourceConfig": {"integrationId": INT, "repository": {"owner": "acme", "name": "agent"}},
        "sourceRevisionConfig": {"graphConfigPath": "langgraph.json"},
    }
    spec.update(over)
    return spec


def ad(
    spec: dict[str, Any], status: Mapping[str, Any] | None = None
) -> Managed[AgentDeploymentSpec]:
    return Managed(
        namespace=NS,
        name="agent",
        uid=UID,
        generation=1,
        spec=AgentDeploymentSpec.model_validate(spec),
        status=AgentDeploymentStatus.model_validate(dict(status or {})),
        resource_version="7",
    )


def external(api: FakeApi, kube: Kube | None = None) -> AgentDeploymentExternal:
    return AgentDeploymentExternal(api.client(), kube or Kube(), natural_key="agent")


async def observe(ext: Any, mr: Any, external_id: str, *, full: bool) -> Observation[Any, Any]:
    """observe() as the reconciler calls it: a full look diffs against the resolved spec."""
    return await ext.observe(mr, external_id, await ext.resolve(mr) if full else None)


async def create(ext: Any, mr: Any) -> Observation[Any, Any]:
    return await ext.create(mr, await ext.resolve(mr))


async def update(ext: Any, mr: Any, obs: Observation[Any, Any]) -> Observation[Any, Any]:
    """update() as the reconciler calls it: with the patch observe() found."""
    assert obs.patch is not None
    return await ext.update(mr, obs, obs.patch)


def repo_json(name: str, branch: str = "main") -> dict[str, Any]:
    return {
        "host_integration_id": INT,
        "id": len(name),
        "name": name,
        "owner": "acme",
        "url": f"https://github.com/acme/{name}",
        "default_branch": branch,
    }


SETTLED_REVISION = {"id": REV, "status": "DEPLOYED"}


# ------------------------------------------------------- desired resolution


@dataclass(frozen=True)
class DesiredCase:
    spec: dict[str, Any]
    want_source_config: dict[str, Any]
    want_revision_config: dict[str, Any]
    want_secrets: dict[str, str] | None = None
    kube: Kube = field(default_factory=Kube)
    want_calls: list[tuple[str, str]] = field(default_factory=list)


ALL_SECRETS_KUBE = Kube(
    secrets={
        "bulk-1": {"A": "a1", "B": "b1"},
        "bulk-2": {"B": "b2", "C": "c2"},
        "one": {"k": "explicit", "k2": "d"},
    }
)

DESIRED_CASES: dict[str, DesiredCase] = {
    "plain spec: camelCase in, snake_case out, unset fields left out": DesiredCase(
        spec=docker_spec(),
        want_source_config={
            "listener_id": LIS,
            "resource_spec": {"min_scale": 1, "memory_mb": 512},
            "listener_config": {"k8s_namespace": "agents"},
        },
        want_revision_config={"image_uri": "registry.example.com/agent:1"},
    ),
    "listenerRef resolved to the Listener's status.listenerId": DesiredCase(
        spec=docker_spec(sourceConfig={"listenerRef": {"name": "edge"}}),
        kube=Kube(listeners={"edge": {"listenerId": LIS}}),
        want_source_config={"listener_id": LIS},
        want_revision_config={"image_uri": "registry.example.com/agent:1"},
    ),
    "repository -> repo_url, integration kept, repoRef defaults to the default branch": DesiredCase(
        spec=git_spec(),
        want_source_config={"integration_id": INT, "repo_url": "https://github.com/acme/agent"},
        want_revision_config={"graph_config_path": "langgraph.json", "repo_ref": "trunk"},
        want_calls=[("GET", REPOS_PATH)],
    ),
    "repository with an explicit repoRef: the spec's ref is kept": DesiredCase(
        spec=git_spec(
            sourceRevisionConfig={"graphConfigPath": "langgraph.json", "repoRef": "release-2"}
        ),
        want_source_config={"integration_id": INT, "repo_url": "https://github.com/acme/agent"},
        want_revision_config={"graph_config_path": "langgraph.json", "repo_ref": "release-2"},
        want_calls=[("GET", REPOS_PATH)],
    ),
    "secretsFrom merged in order, explicit secrets win": DesiredCase(
        spec=docker_spec(
            secretsFrom=[{"secretRef": {"name": "bulk-1"}}, {"secretRef": {"name": "bulk-2"}}],
            secrets=[
                {"name": "B", "valueFrom": {"secretKeyRef": {"name": "one", "key": "k"}}},
                {"name": "D", "valueFrom": {"secretKeyRef": {"name": "one", "key": "k2"}}},
            ],
        ),
        kube=ALL_SECRETS_KUBE,
        want_source_config={
            "listener_id": LIS,
            "resource_spec": {"min_scale": 1, "memory_mb": 512},
            "listener_config": {"k8s_namespace": "agents"},
        },
        want_revision_config={"image_uri": "registry.example.com/agent:1"},
        want_secrets={"A": "a1", "B": "explicit", "C": "c2", "D": "d"},
    ),
    "later secretsFrom wins over earlier": DesiredCase(
        spec=docker_spec(
            sourceConfig={},
            secretsFrom=[{"secretRef": {"name": "bulk-2"}}, {"secretRef": {"name": "bulk-1"}}],
        ),
        kube=ALL_SECRETS_KUBE,
        want_source_config={},
        want_revision_config={"image_uri": "registry.example.com/agent:1"},
        want_secrets={"A": "a1", "B": "b1", "C": "c2"},
    ),
    "secrets: [] manages an empty set": DesiredCase(
        spec=docker_spec(sourceConfig={}, secrets=[]),
        want_source_config={},
        want_revision_config={"image_uri": "registry.example.com/agent:1"},
        want_secrets={},
    ),
}


@pytest.mark.parametrize("case", DESIRED_CASES.values(), ids=DESIRED_CASES.keys())
async def test_desired_resolution(case: DesiredCase) -> None:
    api = FakeApi().on(
        "GET", REPOS_PATH, (200, [repo_json("other", "main"), repo_json("agent", "trunk")])
    )
    mr = ad(case.spec)
    want = await external(api, case.kube).resolve(mr)
    secrets = None if want.secrets is None else {s.name: s.value for s in want.secrets}
    got = {
        "source_config": want.source_config,
        "revision_config": want.revision_config,
        "secrets": secrets,
        "secrets_hash": want.secrets_hash,
        "calls": api.calls,
    }
    assert got == {
        "source_config": case.want_source_config,
        "revision_config": case.want_revision_config,
        "secrets": case.want_secrets,
        "secrets_hash": None
        if want.secrets is None
        else secrets_digest(UID, [Secret(name=k, value=v) for k, v in want_items(case)]),
        "calls": case.want_calls,
    }


def want_items(case: DesiredCase) -> list[tuple[str, str]]:
    return sorted((case.want_secrets or {}).items())


async def test_create_posts_the_resolved_body_once_and_reports_creating() -> None:
    spec = docker_spec(
        sourceConfig={"listenerRef": {"name": "edge"}},
        secrets=[{"name": "OPENAI", "valueFrom": {"secretKeyRef": {"name": "llm", "key": "k"}}}],
    )
    kube = Kube(secrets={"llm": {"k": "sk-1"}}, listeners={"edge": {"listenerId": LIS}})
    api = FakeApi().on("POST", "/v2/deployments", (201, deployment_json(active_revision_id=None)))
    obs = await create(external(api, kube), ad(spec, {}))
    assert api.calls == [("POST", "/v2/deployments")]
    assert api.sent("POST") == [
        {
            "name": "agent",
            "source": "external_docker",
            "source_config": {"listener_id": LIS},
            "source_revision_config": {"image_uri": "registry.example.com/agent:1"},
            "secrets": [{"name": "OPENAI", "value": "sk-1"}],
        }
    ]
    assert (obs.phase, obs.reason) == (Phase.PROGRESSING, ADReason.CREATING)
    assert to_kube(obs.status)["deploymentId"] == DEP
    assert to_kube(obs.status)["latestRevisionId"] == REV
    assert to_kube(obs.status)["secretsHash"] == secrets_digest(
        UID, [Secret(name="OPENAI", value="sk-1")]
    )
    assert "sk-1" not in repr(obs)


async def test_create_uses_spec_name_over_metadata_name() -> None:
    api = FakeApi().on("POST", "/v2/deployments", (201, deployment_json(name="custom")))
    await create(external(api), ad(docker_spec(name="custom")))
    assert api.sent("POST")[0]["name"] == "custom"


# -------------------------------------------------------- dependency errors


DEPENDENCY_CASES: dict[str, tuple[dict[str, Any], Kube, str]] = {
    "secret's Secret missing": (
        docker_spec(
            secrets=[
                {"name": "OPENAI", "valueFrom": {"secretKeyRef": {"name": "llm-keys", "key": "x"}}}
            ]
        ),
        Kube(),
        "Secret llm-keys not found",
    ),
    "secret's key missing": (
        docker_spec(
            secrets=[
                {
                    "name": "OPENAI",
                    "valueFrom": {"secretKeyRef": {"name": "llm-keys", "key": "openai"}},
                }
            ]
        ),
        Kube(secrets={"llm-keys": {"anthropic": "v"}}),
        "Secret llm-keys has no key openai",
    ),
    "secretsFrom Secret missing": (
        docker_spec(secretsFrom=[{"secretRef": {"name": "bulk"}}]),
        Kube(),
        "Secret bulk not found",
    ),
    "listenerRef to a missing Listener": (
        docker_spec(sourceConfig={"listenerRef": {"name": "edge"}}),
        Kube(),
        "Listener edge not found",
    ),
    "listenerRef to a Listener without an id yet": (
        docker_spec(sourceConfig={"listenerRef": {"name": "edge"}}),
        Kube(listeners={"edge": {}}),
        "Listener edge has no listenerId yet",
    ),
}


@pytest.mark.parametrize(
    ("spec", "kube", "message"), DEPENDENCY_CASES.values(), ids=DEPENDENCY_CASES.keys()
)
async def test_dependency_not_ready_and_never_half_a_spec_to_the_api(
    spec: dict[str, Any], kube: Kube, message: str
) -> None:
    api = FakeApi()
    with pytest.raises(DependencyNotReady) as info:
        await create(external(api, kube), ad(spec))
    assert (str(info.value), api.calls) == (message, [])


@pytest.mark.parametrize(
    ("spec", "error", "message"),
    [
        (
            git_spec(
                sourceConfig={"integrationId": INT, "repository": {"owner": "acme", "name": "nope"}}
            ),
            errors.NotFound,
            f"repository acme/nope is not available through integration {INT}",
        ),
        (
            git_spec(sourceConfig={"repository": {"owner": "acme", "name": "agent"}}),
            errors.Invalid,
            "sourceConfig.repository needs sourceConfig.integrationId",
        ),
    ],
    ids=["unknown repository: NotFound (stalls)", "repository without integration: Invalid"],
)
async def test_repository_that_cannot_resolve_is_terminal(
    spec: dict[str, Any], error: type[Exception], message: str
) -> None:
    api = FakeApi().on("GET", REPOS_PATH, (200, [repo_json("agent")]))
    with pytest.raises(error) as info:
        await external(api).resolve(ad(spec))
    assert str(info.value) == message


# -------------------------------------------------------------------- drift


@dataclass(frozen=True)
class DriftCase:
    server: dict[str, Any]
    want_patch: dict[str, Any] | None
    want_drift: tuple[str, ...] = ()
    spec: dict[str, Any] = field(default_factory=docker_spec)
    status: dict[str, Any] = field(default_factory=dict)
    kube: Kube = field(default_factory=Kube)


def server_config(**over: Any) -> dict[str, Any]:
    config: dict[str, Any] = dict(deployment_json()["source_config"])
    config.update(over)
    return config


def server_revision(**over: Any) -> dict[str, Any]:
    config: dict[str, Any] = dict(deployment_json()["source_revision_config"])
    config.update(over)
    return config


LLM_SPEC = docker_spec(
    secrets=[{"name": "OPENAI", "valueFrom": {"secretKeyRef": {"name": "llm", "key": "openai"}}}]
)
LLM_KUBE = Kube(secrets={"llm": {"openai": "sk-new"}})
OLD_HASH = secrets_digest(UID, [Secret(name="OPENAI", value="sk-old")])
NEW_HASH = secrets_digest(UID, [Secret(name="OPENAI", value="sk-new")])

DRIFT_CASES: dict[str, DriftCase] = {
    "unchanged, server nulls vs spec omissions: no PATCH": DriftCase(
        server=deployment_json(), want_patch=None
    ),
    "field only the server sets is not ours: no PATCH": DriftCase(
        server=deployment_json(
            source_config=server_config(custom_url="https://x.example", build_command="make")
        ),
        want_patch=None,
    ),
    "source_config field changed: PATCH only that field": DriftCase(
        server=deployment_json(
            source_config=server_config(listener_config={"k8s_namespace": "elsewhere"})
        ),
        want_patch={"source_config": {"listener_config": {"k8s_namespace": "agents"}}},
        want_drift=("sourceConfig.listenerConfig",),
    ),
    "source_config field the server lacks: PATCH it": DriftCase(
        spec=docker_spec(
            sourceConfig={**docker_spec()["sourceConfig"], "customUrl": "https://a.example"}
        ),
        server=deployment_json(),
        want_patch={"source_config": {"custom_url": "https://a.example"}},
        want_drift=("sourceConfig.customUrl",),
    ),
    "nested resource_spec changed: PATCH the spec's resource_spec": DriftCase(
        server=deployment_json(
            source_config=server_config(resource_spec={"min_scale": 1, "memory_mb": 256})
        ),
        want_patch={"source_config": {"resource_spec": {"min_scale": 1, "memory_mb": 512}}},
        want_drift=("sourceConfig.resourceSpec",),
    ),
    "revision field changed: source_revision_config with only that field": DriftCase(
        server=deployment_json(
            source_revision_config=server_revision(image_uri="registry.example.com/agent:0")
        ),
        want_patch={"source_revision_config": {"image_uri": "registry.example.com/agent:1"}},
        want_drift=("sourceRevisionConfig.imageUri",),
    ),
    "git: graphConfigPath changed, repoRef same: only graphConfigPath": DriftCase(
        spec={
            "source": "git_host",
            "sourceConfig": {"integrationId": INT, "repoUrl": "https://github.com/acme/agent"},
            "sourceRevisionConfig": {"repoRef": "main", "graphConfigPath": "a.json"},
        },
        server=deployment_json(
            source="git_host",
            source_config={"integration_id": INT, "repo_url": "https://github.com/acme/agent"},
            source_revision_config={
                "repo_ref": "main",
                "graph_config_path": "b.json",
                "image_uri": None,
                "repo_commit_sha": "abc123",
            },
        ),
        want_patch={"source_revision_config": {"graph_config_path": "a.json"}},
        want_drift=("sourceRevisionConfig.graphConfigPath",),
    ),
    "source and revision both changed: both sections, nothing else": DriftCase(
        server=deployment_json(
            source_config=server_config(listener_config={"k8s_namespace": "elsewhere"}),
            source_revision_config=server_revision(image_uri="registry.example.com/agent:0"),
        ),
        want_patch={
            "source_config": {"listener_config": {"k8s_namespace": "agents"}},
            "source_revision_config": {"image_uri": "registry.example.com/agent:1"},
        },
        want_drift=("sourceConfig.listenerConfig", "sourceRevisionConfig.imageUri"),
    ),
    "secret value rotated (digest differs): PATCH the secrets": DriftCase(
        spec=LLM_SPEC,
        kube=LLM_KUBE,
        status={"secretsHash": OLD_HASH},
        server=deployment_json(secrets=[{"name": "OPENAI"}]),
        want_patch={"secrets": [{"name": "OPENAI", "value": "sk-new"}]},
        want_drift=("secrets",),
    ),
    "secret values unchanged (same digest): no PATCH": DriftCase(
        spec=LLM_SPEC,
        kube=LLM_KUBE,
        status={"secretsHash": NEW_HASH},
        server=deployment_json(secrets=[{"name": "OPENAI"}]),
        want_patch=None,
    ),
    "secret removed out of band (same digest): PATCH the secrets": DriftCase(
        spec=LLM_SPEC,
        kube=LLM_KUBE,
        status={"secretsHash": NEW_HASH},
        server=deployment_json(secrets=[]),
        want_patch={"secrets": [{"name": "OPENAI", "value": "sk-new"}]},
        want_drift=("secrets",),
    ),
    "adopted (no digest known yet): PATCH the secrets once": DriftCase(
        spec=LLM_SPEC,
        kube=LLM_KUBE,
        server=deployment_json(secrets=[{"name": "OPENAI"}]),
        want_patch={"secrets": [{"name": "OPENAI", "value": "sk-new"}]},
        want_drift=("secrets",),
    ),
}


@pytest.mark.parametrize("case", DRIFT_CASES.values(), ids=DRIFT_CASES.keys())
async def test_drift_patches_only_what_differs(case: DriftCase) -> None:
    api = (
        FakeApi()
        .on("GET", DEPLOYMENT_PATH, (200, case.server))
        .on("PATCH", DEPLOYMENT_PATH, (200, case.server))
    )
    status = {"deploymentId": DEP, "latestRevisionId": REV, "revision": SETTLED_REVISION}
    mr = ad(case.spec, {**status, **case.status})
    ext = external(api, case.kube)
    obs = await observe(ext, mr, DEP, full=True)
    drift = obs.drift  # what observe() found is what update() is handed, and sends
    if not obs.up_to_date:
        obs = await update(ext, mr, obs)
    patches = api.sent("PATCH")
    assert {"patches": patches, "drift": drift} == {
        "patches": [] if case.want_patch is None else [case.want_patch],
        "drift": case.want_drift,
    }
    assert "sk-new" not in repr(obs.status)


async def test_drift_names_are_reported_by_observe() -> None:
    api = FakeApi().on(
        "GET",
        DEPLOYMENT_PATH,
        (200, deployment_json(source_revision_config=server_revision(image_uri="img:0"))),
    )
    mr = ad(docker_spec(), {"deploymentId": DEP, "revision": SETTLED_REVISION})
    obs = await observe(external(api), mr, DEP, full=True)
    assert (obs.up_to_date, obs.drift) == (False, ("sourceRevisionConfig.imageUri",))


@pytest.mark.parametrize(
    ("patched_latest", "want_revision", "want_phase"),
    [
        (REV, SETTLED_REVISION, (Phase.PROGRESSING, ADReason.AWAITING_DATA_PLANE)),
        (REV2, {"id": REV2}, (Phase.PROGRESSING, ADReason.CREATING)),
    ],
    ids=[
        "no new revision: what we know of it is kept, the data plane awaited",
        "new revision: just created",
    ],
)
async def test_update_result_follows_the_revision(
    patched_latest: str, want_revision: dict[str, Any], want_phase: tuple[Phase, str]
) -> None:
    drifted = deployment_json(source_config=server_config(custom_url="https://old.example"))
    after = deployment_json(latest_revision_id=patched_latest)
    api = (
        FakeApi()
        .on("GET", DEPLOYMENT_PATH, (200, drifted))
        .on("PATCH", DEPLOYMENT_PATH, (200, after))
    )
    spec = docker_spec(
        sourceConfig={**docker_spec()["sourceConfig"], "customUrl": "https://new.example"}
    )
    mr = ad(spec, {"deploymentId": DEP, "latestRevisionId": REV, "revision": SETTLED_REVISION})
    ext = external(api)
    obs = await update(ext, mr, await observe(ext, mr, DEP, full=True))
    assert (to_kube(obs.status)["revision"], (obs.phase, obs.reason)) == (want_revision, want_phase)
    assert api.calls == [GET_DEP, PATCH_DEP]


# ------------------------------------------- a change while nothing new runs

RESIZED = deployment_json(source_config=server_config(resource_spec={"min_scale": 1}))
"""The service's deployment before the spec's memoryMb: 512 reached it."""


@pytest.mark.parametrize(
    ("status", "known", "want_revision_fields"),
    [
        *((s, False, True) for s in RevisionStatus if s is not RevisionStatus.DEPLOYED),
        (RevisionStatus.DEPLOYED, False, False),
        (RevisionStatus.DEPLOY_FAILED, True, True),
        (RevisionStatus.DEPLOYED, True, False),
    ],
    ids=[
        *(s.value for s in RevisionStatus if s is not RevisionStatus.DEPLOYED),
        "DEPLOYED",
        "DEPLOY_FAILED known from the status",
        "DEPLOYED known from the status",
    ],
)
async def test_a_change_while_the_latest_revision_is_not_deployed_makes_a_revision(
    status: RevisionStatus, known: bool, want_revision_fields: bool
) -> None:
    """Deployed, the change is applied to what runs (the data plane renders it again);
    otherwise nothing may ever run it (a failed revision runs nothing; what a service
    does with a change landing on a revision on its way is not published), so the PATCH
    carries the spec's image too: a non-null image_uri makes a new revision, as published.
    Read from the revision (polled) or, once settled, from what the status knows of it."""
    api = (
        FakeApi()
        .on(*GET_DEP, (200, RESIZED))
        .on(*GET_REV, (200, revision_json(status.value)))
        .on(*PATCH_DEP, (200, deployment_json(latest_revision_id=REV2)))
    )
    view = {"id": REV, "status": status.value} if known else {"id": REV}
    mr = ad(docker_spec(), {"deploymentId": DEP, "latestRevisionId": REV, "revision": view})
    ext = external(api)
    obs = await observe(ext, mr, DEP, full=True)
    assert obs.drift == ("sourceConfig.resourceSpec",)  # what changed, nothing more
    await update(ext, mr, obs)
    (body,) = api.sent("PATCH")
    revision = {"source_revision_config": {"image_uri": "registry.example.com/agent:1"}}
    resources = {"source_config": {"resource_spec": {"min_scale": 1, "memory_mb": 512}}}
    assert body == (resources | revision if want_revision_fields else resources)
    assert api.calls.count(GET_REV) == (0 if known else 1)  # no call more than before


async def test_a_git_change_after_a_failed_build_sends_its_ref_and_graph() -> None:
    spec = git_spec(
        sourceConfig={"integrationId": INT, "repoUrl": "https://github.com/acme/agent"},
        sourceRevisionConfig={"repoRef": "main", "graphConfigPath": "langgraph.json"},
    )
    server = deployment_json(
        source="git_host",
        source_config={"integration_id": INT, "repo_url": "https://github.com/acme/old"},
        source_revision_config={
            "repo_ref": "main",
            "graph_config_path": "langgraph.json",
            "image_uri": None,
            "repo_commit_sha": "abc123",
        },
    )
    api = FakeApi().on(*GET_DEP, (200, server)).on(*PATCH_DEP, (200, server))
    failed = {"id": REV, "status": "BUILD_FAILED"}
    mr = ad(spec, {"deploymentId": DEP, "latestRevisionId": REV, "revision": failed})
    ext = external(api)
    await update(ext, mr, await observe(ext, mr, DEP, full=True))
    (body,) = api.sent("PATCH")
    assert body["source_revision_config"] == {
        "repo_ref": "main",
        "graph_config_path": "langgraph.json",
    }


async def test_a_change_the_data_plane_applied_is_no_second_deployed() -> None:
    """Ready again after a change without a revision: the Event says the change runs,
    not that the revision (deployed, and said so, before) was deployed once more."""
    api = (
        FakeApi()
        .on(GET_REV[0], GET_REV[1], (200, revision_json("DEPLOYED")))
        .on(*GET_DEP, (200, deployment_json()))
        .on(*LIST_DEPS, (200, {"resources": [], "offset": 0}))
    )
    obs = await observe(external(api), ad(docker_spec(), AWAITING_STATUS), DEP, full=False)
    assert (obs.phase, obs.reason) == (Phase.READY, ADReason.DEPLOYED)  # the condition's
    assert obs.ready_event == (
        ADReason.CHANGE_APPLIED,
        f"Revision {REV} runs the change: the data plane applied it",
    )


# ----------------------------------------------------------- observe budget


@dataclass(frozen=True)
class ObserveCase:
    status: dict[str, Any]
    full: bool
    routes: dict[tuple[str, str], Answer]
    want_calls: list[tuple[str, str]]
    want_phase: tuple[Phase, str] | None
    """None: the observation says the deployment does not exist."""
    want_revision_status: str | None = None


POLL_STATUS = {
    "deploymentId": DEP,
    "latestRevisionId": REV,
    "revision": {"id": REV, "status": "BUILDING"},
}

AWAITING_STATUS = {
    "deploymentId": DEP,
    "latestRevisionId": REV,
    "revision": SETTLED_REVISION,
    "awaitingDataPlane": True,
}
LIST_DEPS = ("GET", "/v2/deployments")

OBSERVE_CASES: dict[str, ObserveCase] = {
    "poll while in progress: exactly one GET of the revision": ObserveCase(
        status=POLL_STATUS,
        full=False,
        routes={GET_REV: (200, revision_json("DEPLOYING")), GET_DEP: (200, deployment_json())},
        want_calls=[GET_REV],
        want_phase=(Phase.PROGRESSING, ADReason.REVISION_IN_PROGRESS),
        want_revision_status="DEPLOYING",
    ),
    "poll sees it terminal: one GET of the deployment, revision not re-read": ObserveCase(
        status=POLL_STATUS,
        full=False,
        routes={GET_REV: (200, revision_json("DEPLOYED")), GET_DEP: (200, deployment_json())},
        want_calls=[GET_REV, GET_DEP],
        want_phase=(Phase.READY, ADReason.DEPLOYED),
        want_revision_status="DEPLOYED",
    ),
    "poll, a newer revision appeared meanwhile: it is read": ObserveCase(
        status=POLL_STATUS,
        full=False,
        routes={
            GET_REV: (200, revision_json("INTERRUPTED")),
            GET_DEP: (200, deployment_json(latest_revision_id=REV2)),
            ("GET", f"{DEPLOYMENT_PATH}/revisions/{REV2}"): (
                200,
                revision_json("QUEUED", rev_id=REV2),
            ),
        },
        want_calls=[GET_REV, GET_DEP, ("GET", f"{DEPLOYMENT_PATH}/revisions/{REV2}")],
        want_phase=(Phase.PROGRESSING, ADReason.REVISION_IN_PROGRESS),
        want_revision_status="QUEUED",
    ),
    "poll, the deployment is gone: absent": ObserveCase(
        status=POLL_STATUS,
        full=False,
        routes={},
        want_calls=[GET_REV, GET_DEP],
        want_phase=None,
    ),
    "full, settled revision: one GET of the deployment, revision not re-read": ObserveCase(
        status={"deploymentId": DEP, "latestRevisionId": REV, "revision": SETTLED_REVISION},
        full=True,
        routes={GET_DEP: (200, deployment_json())},
        want_calls=[GET_DEP],
        want_phase=(Phase.READY, ADReason.DEPLOYED),
        want_revision_status="DEPLOYED",
    ),
    "full, revision known but in progress: read again": ObserveCase(
        status=POLL_STATUS,
        full=True,
        routes={GET_REV: (200, revision_json("BUILDING")), GET_DEP: (200, deployment_json())},
        want_calls=[GET_DEP, GET_REV],
        want_phase=(Phase.PROGRESSING, ADReason.REVISION_IN_PROGRESS),
        want_revision_status="BUILDING",
    ),
    "full, deployment gone: absent": ObserveCase(
        status={"deploymentId": DEP},
        full=True,
        routes={},
        want_calls=[GET_DEP],
        want_phase=None,
    ),
    "awaiting the data plane, still not reconciled: one list more, still waiting": (
        ObserveCase(
            status={**AWAITING_STATUS},
            full=False,
            routes={
                GET_REV: (200, revision_json("DEPLOYED")),
                GET_DEP: (200, deployment_json()),
                LIST_DEPS: (200, {"resources": [deployment_json()], "offset": 1}),
            },
            want_calls=[GET_REV, GET_DEP, LIST_DEPS],
            want_phase=(Phase.PROGRESSING, ADReason.AWAITING_DATA_PLANE),
            want_revision_status="DEPLOYED",
        )
    ),
    "awaiting the data plane, reconciled (or never marked): Ready": ObserveCase(
        status={**AWAITING_STATUS},
        full=False,
        routes={
            GET_REV: (200, revision_json("DEPLOYED")),
            GET_DEP: (200, deployment_json()),
            LIST_DEPS: (200, {"resources": [], "offset": 0}),
        },
        want_calls=[GET_REV, GET_DEP, LIST_DEPS],
        want_phase=(Phase.READY, ADReason.DEPLOYED),
        want_revision_status="DEPLOYED",
    ),
    "awaiting the data plane, a resync: the list is asked too": ObserveCase(
        status={**AWAITING_STATUS},
        full=True,
        routes={
            GET_DEP: (200, deployment_json()),
            LIST_DEPS: (200, {"resources": [deployment_json()], "offset": 1}),
        },
        want_calls=[GET_DEP, LIST_DEPS],
        want_phase=(Phase.PROGRESSING, ADReason.AWAITING_DATA_PLANE),
        want_revision_status="DEPLOYED",
    ),
    "AWAITING_DELETE: progressing, reason Deleting": ObserveCase(
        status={"deploymentId": DEP, "latestRevisionId": REV, "revision": SETTLED_REVISION},
        full=True,
        routes={GET_DEP: (200, deployment_json(status="AWAITING_DELETE"))},
        want_calls=[GET_DEP],
        want_phase=(Phase.PROGRESSING, ADReason.DELETING),
        want_revision_status="DEPLOYED",
    ),
}


@pytest.mark.parametrize("case", OBSERVE_CASES.values(), ids=OBSERVE_CASES.keys())
async def test_observe_call_budget(case: ObserveCase) -> None:
    api = FakeApi()
    for (method, path), answer in case.routes.items():
        api.on(method, path, answer)
    obs = await observe(external(api), ad(docker_spec(), case.status), DEP, full=case.full)
    got_phase = (obs.phase, obs.reason) if obs.exists else None
    revision = (to_kube(obs.status).get("revision") or {}).get("status") if obs.exists else None
    assert {"calls": api.calls, "phase": got_phase, "revision": revision} == {
        "calls": case.want_calls,
        "phase": case.want_phase,
        "revision": case.want_revision_status,
    }


async def test_observation_status_fields() -> None:
    dep = deployment_json(image_version="7")
    dep["source_config"] = {**dep["source_config"], "custom_url": "https://agent.example"}
    api = FakeApi().on("GET", DEPLOYMENT_PATH, (200, dep))
    api.on("GET", REVISION_PATH, (200, revision_json("DEPLOYED", repo_commit_sha="abc")))
    obs = await observe(external(api), ad(docker_spec(), {"secretsHash": "h"}), DEP, full=True)
    assert to_kube(obs.status) == {
        "deploymentId": DEP,
        "latestRevisionId": REV,
        "activeRevisionId": REV,
        "deploymentStatus": "READY",
        "imageVersion": "7",
        "url": "https://agent.example",
        "revision": {
            "id": REV,
            "status": "DEPLOYED",
            "repoCommitSha": "abc",
            "imageUri": "registry.example.com/agent:1",
        },
        "secretsHash": "h",
    }


# ------------------------------------------------------------- phase mapping


PHASES: dict[tuple[RevisionStatus, bool], tuple[Phase, Reason]] = {
    (RevisionStatus.DEPLOYED, True): (Phase.READY, ADReason.DEPLOYED),
    (RevisionStatus.DEPLOYED, False): (Phase.PROGRESSING, ADReason.REVISION_IN_PROGRESS),
    (RevisionStatus.CREATE_FAILED, False): (Phase.FAILED, ADReason.CREATE_FAILED),
    (RevisionStatus.BUILD_FAILED, False): (Phase.FAILED, ADReason.BUILD_FAILED),
    (RevisionStatus.DEPLOY_FAILED, False): (Phase.FAILED, ADReason.DEPLOY_FAILED),
    (RevisionStatus.SKIPPED, False): (Phase.FAILED, ADReason.REVISION_SKIPPED),
    (RevisionStatus.INTERRUPTED, False): (Phase.FAILED, ADReason.REVISION_INTERRUPTED),
    (RevisionStatus.CREATING, False): (Phase.PROGRESSING, ADReason.REVISION_IN_PROGRESS),
    (RevisionStatus.QUEUED, False): (Phase.PROGRESSING, ADReason.REVISION_IN_PROGRESS),
    (RevisionStatus.AWAITING_BUILD, False): (Phase.PROGRESSING, ADReason.REVISION_IN_PROGRESS),
    (RevisionStatus.BUILDING, False): (Phase.PROGRESSING, ADReason.REVISION_IN_PROGRESS),
    (RevisionStatus.AWAITING_DEPLOY, False): (Phase.PROGRESSING, ADReason.REVISION_IN_PROGRESS),
    (RevisionStatus.DEPLOYING, False): (Phase.PROGRESSING, ADReason.REVISION_IN_PROGRESS),
    (RevisionStatus.UNKNOWN, False): (Phase.PROGRESSING, ADReason.REVISION_IN_PROGRESS),
}


def test_phase_table_covers_every_revision_status() -> None:
    assert {status for status, _ in PHASES} == set(RevisionStatus)


@pytest.mark.parametrize(
    ("key", "want"),
    PHASES.items(),
    ids=[f"{s.value}{'+active' if active else ''}" for s, active in PHASES],
)
async def test_phase_of_every_revision_status(
    key: tuple[RevisionStatus, bool], want: tuple[Phase, Reason]
) -> None:
    status, active = key
    api = FakeApi().on(
        "GET", DEPLOYMENT_PATH, (200, deployment_json(active_revision_id=REV if active else None))
    )
    api.on("GET", REVISION_PATH, (200, revision_json(status.value)))
    obs = await observe(external(api), ad(docker_spec()), DEP, full=True)
    assert (obs.phase, obs.reason) == want
    if want[0] is Phase.FAILED:
        assert obs.message == (
            f"Revision {REV} ended {status.value}; the next change of the spec rolls a new revision"
        )


# ------------------------------------------------------------ find / delete


async def test_find_by_exact_name_follows_name_contains_pages() -> None:
    # The published contract has no exact-name filter: name_contains, every page, and
    # the exact match made by the client; here the match is on the second page.
    others = [deployment_json(id=str(uuid.uuid4()), name=f"agent-{i}") for i in range(100)]
    api = FakeApi().on(
        "GET",
        "/v2/deployments",
        (200, {"resources": others, "offset": 100}),
        (200, {"resources": [deployment_json(name="agent")], "offset": 101}),
    )
    assert await external(api).find(ad(docker_spec())) == DEP
    assert api.params == [
        {"name_contains": "agent", "limit": "100"},
        {"name_contains": "agent", "limit": "100", "offset": "100"},
    ]


async def test_find_nothing_of_that_exact_name() -> None:
    listing = {"resources": [deployment_json(name="agent-2")], "offset": 1}
    api = FakeApi().on("GET", "/v2/deployments", (200, listing))
    assert await external(api).find(ad(docker_spec())) is None


async def test_find_gives_up_beyond_50_full_pages_rather_than_answer_none() -> None:
    def full_page(start: int) -> Answer:
        items = [
            deployment_json(id=str(uuid.uuid4()), name=f"agent-{start + i}") for i in range(100)
        ]
        return (200, {"resources": items, "offset": start + 100})

    api = FakeApi().on("GET", "/v2/deployments", *[full_page(100 * p) for p in range(51)])
    with pytest.raises(errors.ControlPlaneError, match="more than 5000 deployments"):
        await external(api).find(ad(docker_spec()))
    assert len(api.calls) == 50


BOT = {"agentId": "support-bot", "environment": "staging"}
MARKED_AT = datetime(2025, 1, 2, 3, 4, 5, tzinfo=UTC)  # NOW: the deployments' created_at


def marked(mr: Managed[AgentDeploymentSpec], at: datetime | None) -> Managed[AgentDeploymentSpec]:
    """`mr` with a create marker from an earlier pass whose first create call was at
    `at` (None: written by hand)."""
    return dataclasses.replace(mr, create_pending=CreatePending("key", requested_at=at))


async def test_find_of_an_agents_deployment_uses_the_agent_filters() -> None:
    listing = {"resources": [deployment_json(name="support-bot-staging")], "offset": 1}
    api = FakeApi().on("GET", "/v2/deployments", (200, listing))
    assert await external(api).find(ad(docker_spec(agent=BOT))) == DEP
    assert api.params == [
        {"agent_id": "support-bot", "agent_environment": "staging", "limit": "100"}
    ]


async def test_find_by_a_markers_key_reads_an_agent_key_as_the_agent() -> None:
    """A marker names the key a create was made under, which the spec may no longer say
    (corrected before any id was recorded): an agent's key is looked up by the agent."""
    listing = {"resources": [deployment_json(name="support-bot-staging")], "offset": 1}
    api = FakeApi().on("GET", "/v2/deployments", (200, listing))
    assert await external(api).find(ad(docker_spec()), "agent support-bot in staging") == DEP
    assert api.params[0]["agent_environment"] == "staging"
    assert await external(api).find(ad(docker_spec(agent=BOT)), "agent") is None
    assert api.params[1]["name_contains"] == "agent"  # a name's key, by its name


# name mode and agent mode alike: (spec, marker time, ObserveOnly) -> found or not
FIND_MARKER_CASES: dict[str, tuple[dict[str, Any], datetime | None, bool, bool]] = {
    "no time (by hand): adopts": (docker_spec(agent=BOT), None, False, True),
    "made after the first create call: ours": (
        docker_spec(agent=BOT),
        MARKED_AT - timedelta(seconds=1),
        False,
        True,
    ),
    "made within the clocks' skew before it: ours": (
        docker_spec(agent=BOT),
        MARKED_AT + timedelta(seconds=59),
        False,
        True,
    ),
    "made well before it: someone else's": (
        docker_spec(agent=BOT),
        MARKED_AT + timedelta(minutes=2),
        False,
        False,
    ),
    "by name, made well before it: someone else's": (
        docker_spec(),
        MARKED_AT + timedelta(minutes=2),
        False,
        False,
    ),
    "ObserveOnly finds whatever is there": (
        docker_spec(agent=BOT, managementPolicy="ObserveOnly"),
        MARKED_AT + timedelta(minutes=2),
        True,
        True,
    ),
}


@pytest.mark.parametrize(
    ("spec", "at", "observe_only", "found"),
    FIND_MARKER_CASES.values(),
    ids=FIND_MARKER_CASES.keys(),
)
async def test_find_never_takes_a_deployment_made_before_the_first_create_call(
    spec: dict[str, Any], at: datetime | None, observe_only: bool, found: bool
) -> None:
    listing = {"resources": [deployment_json()], "offset": 1}
    api = FakeApi().on("GET", "/v2/deployments", (200, listing))
    mr = marked(ad(spec), at)
    assert (mr.spec.management_policy.value == "ObserveOnly") is observe_only
    assert await external(api).find(mr) == (DEP if found else None)


async def test_create_of_an_agents_deployment_posts_the_agent_and_no_name() -> None:
    api = FakeApi().on("POST", "/v2/deployments", (201, deployment_json(name="bot-staging")))
    await create(external(api), ad(docker_spec(agent=BOT)))
    (body,) = api.sent("POST")
    assert body["agent"] == {"agent_id": "support-bot", "environment": "staging"}
    assert "name" not in body


DELETE_CASES: dict[str, tuple[dict[tuple[str, str], Answer], bool, list[tuple[str, str]]]] = {
    "present: GET then DELETE, not gone yet": (
        {GET_DEP: (200, deployment_json()), DELETE_DEP: (202, None)},
        False,
        [GET_DEP, DELETE_DEP],
    ),
    "already being deleted: GET only, not gone yet": (
        {GET_DEP: (200, deployment_json(status="AWAITING_DELETE"))},
        False,
        [GET_DEP],
    ),
    "404 on GET: gone": ({}, True, [GET_DEP]),
    "404 on DELETE (raced): gone": (
        {GET_DEP: (200, deployment_json())},
        True,
        [GET_DEP, DELETE_DEP],
    ),
}


@pytest.mark.parametrize(
    ("routes", "want", "calls"), DELETE_CASES.values(), ids=DELETE_CASES.keys()
)
async def test_delete(
    routes: dict[tuple[str, str], Answer], want: bool, calls: list[tuple[str, str]]
) -> None:
    api = FakeApi()
    for (method, path), answer in routes.items():
        api.on(method, path, answer)
    gone = await external(api).delete(ad(docker_spec()), DEP)
    assert (gone, api.calls) == (want, calls)


async def test_delete_then_404_on_the_next_call() -> None:
    api = FakeApi().on("GET", DEPLOYMENT_PATH, (200, deployment_json()), (404, {"detail": "gone"}))
    api.on("DELETE", DEPLOYMENT_PATH, (202, None))
    ext = external(api)
    assert [await ext.delete(ad(docker_spec()), DEP) for _ in range(2)] == [False, True]
    assert api.calls == [GET_DEP, DELETE_DEP, GET_DEP]


async def test_delete_error_propagates() -> None:
    api = FakeApi().on("GET", DEPLOYMENT_PATH, (503, {"detail": "down"}))
    with pytest.raises(errors.Unavailable):
        await external(api).delete(ad(docker_spec()), DEP)


def test_identity_of_an_agent_deployment() -> None:
    client = FakeApi().client()

    def connected(**spec: Any) -> AgentDeploymentExternal:
        return AgentDeploymentExternal.connected(client, Kube(), ad(docker_spec(**spec)))

    assert AgentDeploymentStatus(deployment_id=DEP).external_id == DEP
    assert connected().adopt_id is None
    assert connected(deploymentId=DEP).adopt_id == DEP
    assert connected().natural_key == "agent"
    assert connected(name="other").natural_key == "other"
    assert connected(agent=BOT).natural_key == "agent support-bot in staging"


# ------------------------------------------------------------------ listener


def listener_json(**over: Any) -> dict[str, Any]:
    return apijson.listener_json(**{"id": LIS, "created_at": NOW, "updated_at": NOW, **over})


def lis(**spec: Any) -> Managed[ListenerSpec]:
    base: dict[str, Any] = {
        "computeType": "k8s",
        "computeId": "cluster-a",
        "computeConfig": {"k8sNamespaces": ["agents"]},
        "version": "1",
    }
    base.update(spec)
    return Managed(
        namespace=NS,
        name="edge",
        uid=UID,
        generation=1,
        spec=ListenerSpec.model_validate(base),
        status=ListenerStatus(listener_id=LIS),
    )


LISTENER_DRIFT: dict[str, tuple[dict[str, Any], dict[str, Any], dict[str, Any] | None]] = {
    "in sync: no PATCH": ({}, listener_json(), None),
    "server nulls vs spec omissions: no PATCH": (
        {"version": None, "computeConfig": None},
        listener_json(version=None, compute_config={"k8s_namespaces": None}),
        None,
    ),
    "version changed: PATCH version only": (
        {"version": "2"},
        listener_json(),
        {"version": "2"},
    ),
    "compute_config changed: PATCH compute_config only": (
        {"computeConfig": {"k8sNamespaces": ["agents", "batch"]}},
        listener_json(),
        {"compute_config": {"k8s_namespaces": ["agents", "batch"]}},
    ),
    "both changed": (
        {"version": "2", "computeConfig": {"k8sNamespaces": []}},
        listener_json(),
        {"version": "2", "compute_config": {"k8s_namespaces": []}},
    ),
}


@pytest.mark.parametrize(
    ("spec", "server", "want_patch"), LISTENER_DRIFT.values(), ids=LISTENER_DRIFT.keys()
)
async def test_listener_drift(
    spec: dict[str, Any], server: dict[str, Any], want_patch: dict[str, Any] | None
) -> None:
    api = (
        FakeApi().on("GET", LISTENER_PATH, (200, server)).on("PATCH", LISTENER_PATH, (200, server))
    )
    mr = lis(**spec)
    ext = ListenerExternal(api.client(), "cluster-a")
    obs = await observe(ext, mr, LIS, full=True)
    if not obs.up_to_date:
        obs = await update(ext, mr, obs)
    patches = api.sent("PATCH")
    assert (patches[0] if patches else None) == want_patch
    assert (obs.phase, obs.reason, to_kube(obs.status)["listenerId"]) == (
        Phase.READY,
        "Available",
        LIS,
    )


async def test_listener_immutable_mismatch_is_a_conflict() -> None:
    api = FakeApi().on("GET", LISTENER_PATH, (200, listener_json(compute_id="cluster-b")))
    with pytest.raises(errors.Conflict) as info:
        await observe(ListenerExternal(api.client(), "cluster-a"), lis(), LIS, full=True)
    assert str(info.value) == (
        f"listener {LIS} has computeType/computeId k8s/cluster-b, the spec says "
        "k8s/cluster-a; they cannot change"
    )
    assert api.sent("PATCH") == []


async def test_listener_absent() -> None:
    obs = await observe(ListenerExternal(FakeApi().client(), "cluster-a"), lis(), LIS, full=True)
    assert not obs.exists


async def test_listener_create_body_and_find_by_compute_id() -> None:
    other = "55555555-5555-4555-8555-555555555555"
    api = FakeApi().on("POST", "/v2/listeners", (201, listener_json()))
    api.on(
        "GET",
        "/v2/listeners",
        (
            200,
            {"resources": [listener_json(id=other, compute_id="cluster-z")] * 100, "offset": 100},
        ),
        (200, {"resources": [listener_json()], "offset": 101}),
    )
    ext = ListenerExternal(api.client(), "cluster-a")
    obs = await create(ext, lis())
    assert api.sent("POST") == [
        {
            "compute_type": "k8s",
            "compute_id": "cluster-a",
            "compute_config": {"k8s_namespaces": ["agents"]},
            "version": "1",
        }
    ]
    assert to_kube(obs.status) == {"listenerId": LIS, "version": "1"}
    assert await ext.find(lis()) == LIS
    # no compute_id filter is published: the listing is matched here, page by page
    assert [p for m, p in zip(api.calls, api.params, strict=True) if m[0] == "GET"] == [
        {"limit": "100"},
        {"limit": "100", "offset": "100"},
    ]
    empty = FakeApi().on("GET", "/v2/listeners", (200, {"resources": [], "offset": 0}))
    assert await ListenerExternal(empty.client(), "cluster-a").find(lis()) is None
    identity = [ListenerExternal.connected(api.client(), m) for m in (lis(), lis(listenerId=LIS))]
    assert (identity[0].natural_key, identity[0].adopt_id, identity[1].adopt_id) == (
        "cluster-a",
        None,
        LIS,
    )


LISTENER_DELETE: dict[str, tuple[dict[tuple[str, str], Answer], bool]] = {
    "deleted but still readable: not gone yet": (
        {("DELETE", LISTENER_PATH): (204, None), ("GET", LISTENER_PATH): (200, listener_json())},
        False,
    ),
    "deleted, then 404: gone": ({("DELETE", LISTENER_PATH): (204, None)}, True),
    "404 on DELETE: gone": ({}, True),
}


@pytest.mark.parametrize(("routes", "want"), LISTENER_DELETE.values(), ids=LISTENER_DELETE.keys())
async def test_listener_delete(routes: dict[tuple[str, str], Answer], want: bool) -> None:
    api = FakeApi()
    for (method, path), answer in routes.items():
        api.on(method, path, answer)
    assert await ListenerExternal(api.client(), "cluster-a").delete(lis(), LIS) is want
    assert api.calls[0] == ("DELETE", LISTENER_PATH)


# --------------------------------------------------------------- connections


@dataclass
class Factory:
    made: list[Connection] = field(default_factory=list)

    def __call__(self, conn: Connection) -> ControlPlaneClient:
        self.made.append(conn)
        return FakeApi().client()


DEFAULT = Connection("http://control-plane", API_KEY, "tenant-1")


@pytest.mark.parametrize(
    ("default", "ref", "secrets", "message"),
    [
        (
            None,
            None,
            {},
            "no control-plane connection: set spec.connectionRef, create the "
            "ControlPlaneConnection 'default' in namespace team-a, or set the operator's "
            "DEPLOYPLANE_CONTROL_PLANE_URL",
        ),
        (DEFAULT, "cp", {}, "no ControlPlaneConnection or Secret named cp"),
        (DEFAULT, "cp", {"cp": {"apiKey": "k"}}, "connection Secret cp has no key url"),
        (DEFAULT, "cp", {"cp": {"url": "", "apiKey": "k"}}, "connection Secret cp has no key url"),
    ],
    ids=["no default connection", "Secret missing", "Secret without url", "empty url"],
)
async def test_connection_not_ready(
    default: Connection | None, ref: str | None, secrets: dict[str, dict[str, str]], message: str
) -> None:
    factory = Factory()
    conns = Connections(default, Kube(secrets=secrets), factory=factory)
    with pytest.raises(DependencyNotReady) as info:
        await conns.client_for(NS, ConnectionReference(name=ref) if ref else None)
    assert (str(info.value), factory.made) == (message, [])


async def test_clients_are_pooled_per_connection() -> None:
    factory = Factory()
    kube = Kube(
        secrets={
            "same": {"url": DEFAULT.url, "apiKey": API_KEY, "tenantId": "tenant-1"},
            "other-key": {"url": DEFAULT.url, "apiKey": "another-key"},
            "other-key-again": {"url": DEFAULT.url, "apiKey": "another-key"},
        }
    )
    conns = Connections(DEFAULT, kube, factory=factory)

    async def client(ref: str | None) -> ControlPlaneClient:
        return await conns.client_for(NS, ConnectionReference(name=ref) if ref else None)

    default_a, default_b = await client(None), await client(None)
    same = await client("same")
    other, other_again = await client("other-key"), await client("other-key-again")
    assert default_a is default_b is same
    assert other is other_again
    assert other is not default_a
    assert factory.made == [DEFAULT, Connection(DEFAULT.url, "another-key", None)]
    await conns.aclose()


async def test_connecters_use_the_resource_connection() -> None:
    factory = Factory()
    kube = Kube(secrets={"cp": {"url": "http://elsewhere", "apiKey": "k2"}})
    conns = Connections(DEFAULT, kube, factory=factory)
    await AgentDeploymentConnecter(conns, kube).connect(
        ad(docker_spec(connectionRef={"name": "cp"}))
    )
    await ListenerConnecter(conns).connect(lis())
    assert [c.url for c in factory.made] == ["http://elsewhere", DEFAULT.url]


def test_repr_never_shows_the_api_key() -> None:
    conn = Connection("http://control-plane", API_KEY, "tenant-1")
    shown = [repr(conn), str(conn), repr(conn.pool_key), repr(FakeApi().client())]
    assert [API_KEY in text for text in shown] == [False] * len(shown)
    assert "<redacted>" in repr(conn)


# ------------------------------------------------------------ secrets digest


def test_secrets_digest() -> None:
    one = [Secret(name="A", value="a-value-1"), Secret(name="B", value="b-value")]
    digest = secrets_digest("uid-1", one)
    got = {
        "same input, same digest": secrets_digest("uid-1", one) == digest,
        "order does not matter": secrets_digest("uid-1", one[::-1]) == digest,
        "depends on uid": secrets_digest("uid-2", one) != digest,
        "depends on values": secrets_digest("uid-1", [Secret(name="A", value="a-value-2"), one[1]])
        != digest,
        "depends on names": secrets_digest("uid-1", [Secret(name="C", value="a-value-1"), one[1]])
        != digest,
        "no value inside": not any(s.value in digest for s in one),
        "hex, 32 chars": len(digest) == 32 and int(digest, 16) >= 0,
    }
    assert got == dict.fromkeys(got, True)


# ----------------------------------------------------- published additions


REFS = [{"name": "OPENAI_API_KEY", "secretName": "llm", "secretKey": "openai"}]
REFS_API = [{"name": "OPENAI_API_KEY", "secret_name": "llm", "secret_key": "openai"}]


async def test_secret_references_are_sent_on_create_and_patched_on_drift() -> None:
    api = FakeApi().on("POST", "/v2/deployments", (201, deployment_json()))
    await create(external(api), ad(docker_spec(secretReferences=REFS)))
    assert api.sent("POST")[0]["secret_references"] == REFS_API
    # the service has other references: the drift PATCH sends the spec's
    drifted = deployment_json(
        secret_references=[{"name": "X", "secret_name": "s", "secret_key": "k"}]
    )
    api = FakeApi().on("GET", DEPLOYMENT_PATH, (200, drifted))
    api.on("GET", REVISION_PATH, (200, revision_json("DEPLOYED")))
    obs = await observe(external(api), ad(docker_spec(secretReferences=REFS)), DEP, full=True)
    assert not obs.up_to_date
    assert "secretReferences" in obs.drift
    in_sync = FakeApi().on(
        "GET", DEPLOYMENT_PATH, (200, deployment_json(secret_references=REFS_API))
    )
    in_sync.on("GET", REVISION_PATH, (200, revision_json("DEPLOYED")))
    obs = await observe(external(in_sync), ad(docker_spec(secretReferences=REFS)), DEP, full=True)
    assert obs.up_to_date


@pytest.mark.parametrize(
    ("flag", "query"), [(False, {}), (True, {"delete_tracing_project": "true"})]
)
async def test_delete_passes_delete_tracing_project(flag: bool, query: dict[str, str]) -> None:
    api = FakeApi().on("GET", DEPLOYMENT_PATH, (200, deployment_json()))
    api.on("DELETE", DEPLOYMENT_PATH, (204, None))
    assert await external(api).delete(ad(docker_spec(deleteTracingProject=flag)), DEP) is False
    assert api.params[-1] == query


# ------------------------------------------------------- why a revision failed

BUILD_LOGS_PATH = f"/v1/projects/{DEP}/revisions/{REV}/build_logs"
DEPLOY_LOGS_PATH = f"/v1/projects/{DEP}/revisions/{REV}/deploy_logs"


def log_page(*messages: str) -> dict[str, Any]:
    """Newest first, as the tail is asked for (order desc)."""
    logs = [
        {"id": str(i), "timestamp": 1, "level": "INFO", "message": m}
        for i, m in enumerate(reversed(messages))
    ]
    return {"logs": logs, "next_offset": None}


@pytest.mark.parametrize(
    ("status", "path"),
    [("BUILD_FAILED", BUILD_LOGS_PATH), ("DEPLOY_FAILED", DEPLOY_LOGS_PATH)],
)
async def test_a_failed_revision_says_why_with_its_log_tail(status: str, path: str) -> None:
    dep = deployment_json(active_revision_id=None, secrets=[{"name": "OPENAI_API_KEY"}])
    api = FakeApi().on("GET", DEPLOYMENT_PATH, (200, dep))
    api.on("GET", REVISION_PATH, (200, revision_json(status)))
    lines = [f"line {i}" for i in range(8)]
    lines[-1] = "line 7" + " y" * 300  # every shown line as long as a line may be
    lines[-2] = "OPENAI_API_KEY=sk-leaked-value and token: abc123 " + "x" * 400
    api.on("POST", path, (200, log_page(*lines)))
    obs = await observe(external(api), ad(docker_spec()), DEP, full=True)
    assert api.sent("POST") == [{"order": "desc", "limit": 5}]
    head, *tail = obs.message.split("\n")
    assert head == (
        f"Revision {REV} ended {status}; the next change of the spec rolls a new revision."
        " Last log lines:"
    )
    assert tail[0] == "  line 3"
    assert tail[-1].startswith("  line 7 y y")  # the last five, oldest first
    assert tail[-1].endswith("...")
    assert len(tail) == 5
    assert "sk-leaked-value" not in obs.message
    assert "abc123" not in obs.message
    assert "OPENAI_API_KEY=*** and token: ***" in tail[-2]
    assert all(len(line) <= 2 + 160 for line in tail)  # each line bounded
    assert len(obs.message) <= 1024  # whole in the one Event (kubeapi cuts beyond)

    # later passes keep the message from the condition and do not read the log again
    kept = {
        "deploymentId": DEP,
        "latestRevisionId": REV,
        "revision": {"id": REV, "status": status},
        "conditions": [
            {
                "type": "Stalled",
                "status": "True",
                "reason": "x",
                "message": obs.message,
                "lastTransitionTime": "2026-01-01T00:00:00Z",
            },
        ],
    }
    again = FakeApi().on("GET", DEPLOYMENT_PATH, (200, dep))
    later = await observe(external(again), ad(docker_spec(), kept), DEP, full=True)
    assert later.message == obs.message
    assert again.calls == [("GET", DEPLOYMENT_PATH)]


async def test_a_service_without_logs_leaves_the_plain_reason() -> None:
    api = FakeApi().on("GET", DEPLOYMENT_PATH, (200, deployment_json(active_revision_id=None)))
    api.on("GET", REVISION_PATH, (200, revision_json("DEPLOY_FAILED")))
    obs = await observe(external(api), ad(docker_spec()), DEP, full=True)  # logs: 404
    assert (
        obs.message
        == f"Revision {REV} ended DEPLOY_FAILED; the next change of the spec rolls a new revision"
    )


@pytest.mark.parametrize(
    ("line", "shown"),
    [
        ("Authorization: Bearer eyJhbGciOi.payload", "Authorization: Bearer ***"),
        ("curl -H 'Authorization: Basic dXNlcjpwYXNz' x", "curl -H 'Authorization: Basic *** x"),
        (
            "pip install git+https://bob:hunter2@git.example.com/x.git",
            "pip install git+https://***@git.example.com/x.git",
        ),
        ("GET https://host.example/path 200", "GET https://host.example/path 200"),
    ],
)
def test_the_tail_hides_authorization_credentials_and_url_user_info(line: str, shown: str) -> None:
    message = with_tail("Failed", [line], [])
    assert message.split("\n")[1] == f"  {shown}"


def test_the_longest_explained_message_fits_one_event() -> None:
    base = f"Revision {REV} ended DEPLOY_FAILED; the next change of the spec rolls a new revision"
    message = with_tail(base, ["z" * 5000] * 9, [])
    assert message.count("\n") == 5
    assert len(message) <= 1024  # kube/api.py cuts an Event's message beyond


async def test_awaiting_the_data_plane_asks_the_published_filter_and_ends_when_reconciled() -> None:
    """The extra read is the published `remote_reconciled=false` filter on this id; once
    the deployment is not listed the wait ends (the status forgets it)."""
    api = (
        FakeApi()
        .on(GET_REV[0], GET_REV[1], (200, revision_json("DEPLOYED")))
        .on(*GET_DEP, (200, deployment_json()))
        .on(*LIST_DEPS, (200, {"resources": [], "offset": 0}))
    )
    obs = await observe(external(api), ad(docker_spec(), AWAITING_STATUS), DEP, full=False)
    assert api.params[-1] == {"deployment_ids": DEP, "remote_reconciled": "false", "limit": "1"}
    assert obs.phase is Phase.READY
    assert "awaitingDataPlane" not in to_kube(obs.status)


async def test_an_update_without_a_revision_waits_for_the_data_plane_without_a_call() -> None:
    """Right after the PATCH: Reconciling with what it waits for, and no read yet."""
    drifted = deployment_json(source_config=server_config(resource_spec={"min_scale": 1}))
    api = (
        FakeApi()
        .on("GET", DEPLOYMENT_PATH, (200, drifted))
        .on("PATCH", DEPLOYMENT_PATH, (200, deployment_json()))
    )
    mr = ad(
        docker_spec(), {"deploymentId": DEP, "latestRevisionId": REV, "revision": SETTLED_REVISION}
    )
    ext = external(api)
    obs = await update(ext, mr, await observe(ext, mr, DEP, full=True))
    assert (obs.phase, obs.reason) == (Phase.PROGRESSING, ADReason.AWAITING_DATA_PLANE)
    assert obs.message == "waiting for the listener to apply the change (remote_reconciled=false)"
    assert to_kube(obs.status)["awaitingDataPlane"] is True
    assert api.calls == [GET_DEP, PATCH_DEP]
