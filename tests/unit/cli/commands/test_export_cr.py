"""`deployplane export`'s pure half: API models -> AgentDeployment / Listener objects.

What the operator would do with each exported object is checked with the operator's own
code (the spec model, the resolver over a fake Kubernetes, the diff functions): an
exported resource must come out in sync with the deployment it was exported from."""

from __future__ import annotations

import json
from typing import Any
from uuid import UUID

import pytest
from tests.support.crd_schema import schema_root, unknown_keys
from tests.support.fakekube import FakeKube

from deployplane.api.client import ControlPlaneClient
from deployplane.api.models import Deployment, Listener
from deployplane.cli.commands.export.cr import (
    API_VERSION,
    ExportNameError,
    Policy,
    cr_json,
    deployment_cr,
    export,
)
from deployplane.cli.commands.export.names import Named, dns_label, unique_names
from deployplane.externals.agentdeployment.diff import diff
from deployplane.externals.agentdeployment.resolve import Resolver
from deployplane.externals.listener.diff import check_identity, wanted
from deployplane.externals.listener.diff import diff as listener_diff
from deployplane.kinds.agentdeployment.spec import AgentDeploymentSpec
from deployplane.kinds.agentdeployment.status import AgentDeploymentStatus
from deployplane.kinds.listener.spec import ListenerSpec
from deployplane.reconcile.external import Managed

NOW = "2026-01-02T03:04:05Z"
LIS_ID = "33333333-3333-4333-8333-333333333333"
OTHER_LIS = "55555555-5555-4555-8555-555555555555"
INTEGRATION = "44444444-4444-4444-8444-444444444444"
NS = "team-a"


def docker_dep(**over: Any) -> Deployment:
    body: dict[str, Any] = {
        "id": "11111111-1111-4111-8111-111111111111",
        "tenant_id": "99999999-9999-4999-8999-999999999999",
        "name": "img-bot",
        "source": "external_docker",
        "source_config": {
            "listener_id": LIS_ID,
            "listener_config": {"k8s_namespace": "agents"},
            "custom_url": "https://img-bot.example",
            "resource_spec": {
                "min_scale": 1,
                "cpu": 0.5,
                "labels": {"team_name": "a", "app.kubernetes.io/part-of": "bots"},
                "volumes": [{"name": "cache", "emptyDir": {"sizeLimit": "1Gi"}}],
                "volume_mounts": [{"name": "cache", "mountPath": "/cache"}],
            },
            # reported as null by the service: "not set"
            "install_command": None,
        },
        "source_revision_config": {"image_uri": "registry.example.com/bot:1"},
        # the published Secret shape, as the service answers it: the value a mask
        "secrets": [
            {"name": "OPENAI_API_KEY", "value": "<redacted>"},
            {"name": "db.password", "value": "<redacted>"},
        ],
        "secret_references": [{"name": "TOKEN", "secret_name": "tok", "secret_key": "value"}],
        "created_at": NOW,
        "updated_at": NOW,
        "status": "READY",
        "latest_revision_id": "22222222-2222-4222-8222-222222222222",
        "active_revision_id": "22222222-2222-4222-8222-222222222222",
    }
    body.update(over)
    return Deployment.model_validate(body)


def git_dep(**over: Any) -> Deployment:
    body: dict[str, Any] = {
        "id": "66666666-6666-4666-8666-666666666666",
        "name": "Support_Bot",
        "source": "git_host",
        "source_config": {
            "integration_id": INTEGRATION,
            "repo_url": "https://git.example.com/acme/support-bot",
            "build_on_push": False,
            "deployment_type": "dev",
            "custom_url": "https://support-bot.service.example",  # set by the service
        },
        "source_revision_config": {
            "repo_ref": "main",
            "graph_config_path": "langgraph.json",
            "repo_commit_sha": "a" * 40,  # read-only
            "image_uri": "registry.service.example/built:1",  # the service's build
        },
        "secrets": [],
    }
    return docker_dep(**{**body, **over})


def lis(**over: Any) -> Listener:
    body: dict[str, Any] = {
        "id": LIS_ID,
        "compute_type": "k8s",
        "compute_id": "cluster-a",
        "compute_config": {"k8s_namespaces": ["agents"], "node_pool": "gpu"},
        "version": "1",
        "created_at": NOW,
        "updated_at": NOW,
    }
    body.update(over)
    return Listener.model_validate(body)


def by_name(result: Any) -> dict[str, dict[str, Any]]:
    return {item.reference: item.body for item in result.resources}


# ---------------------------------------------------------------- the objects


def test_a_docker_deployment_is_an_observe_only_agentdeployment_adopting_it_by_id() -> None:
    body = by_name(export([docker_dep()], []))["agentdeployment/img-bot"]
    assert body["apiVersion"] == API_VERSION == "deployplane.io/v1alpha1"
    assert body["kind"] == "AgentDeployment"
    assert body["metadata"] == {"name": "img-bot"}
    spec = body["spec"]
    assert spec["managementPolicy"] == "ObserveOnly"
    assert spec["deploymentId"] == "11111111-1111-4111-8111-111111111111"
    assert "name" not in spec  # metadata.name is the deployment's name
    assert spec["source"] == "external_docker"
    assert spec["sourceConfig"] == {
        "customUrl": "https://img-bot.example",
        "resourceSpec": {
            "minScale": 1,
            "cpu": 0.5,
            # free-form keys stay exactly as reported; Kubernetes shapes keep their names
            "labels": {"team_name": "a", "app.kubernetes.io/part-of": "bots"},
            "volumes": [{"name": "cache", "emptyDir": {"sizeLimit": "1Gi"}}],
            "volumeMounts": [{"name": "cache", "mountPath": "/cache"}],
        },
        "listenerId": LIS_ID,  # its Listener is not exported: the raw id
        "listenerConfig": {"k8sNamespace": "agents"},
    }
    assert spec["sourceRevisionConfig"] == {"imageUri": "registry.example.com/bot:1"}
    assert spec["secretReferences"] == [
        {"name": "TOKEN", "secretName": "tok", "secretKey": "value"}
    ]


def test_an_agents_deployment_is_exported_with_its_agent_and_no_name() -> None:
    agent = {"agent_id": "support-bot", "environment": "production"}
    dep = docker_dep(name="support-bot-production", agent=agent)
    body = by_name(export([dep], []))["agentdeployment/support-bot-production"]
    assert body["spec"]["agent"] == {"agentId": "support-bot", "environment": "production"}
    assert "name" not in body["spec"]
    renamed = deployment_cr(dep, "bot", Policy.FULL, {})
    assert "name" not in renamed["spec"]  # spec.agent and spec.name exclude each other
    assert _schema_unknowns(renamed) == []


def test_manage_writes_full_on_both_kinds() -> None:
    result = export([docker_dep()], [lis()], Policy.FULL)
    assert {item.body["spec"]["managementPolicy"] for item in result.resources} == {"Full"}
    default = export([docker_dep()], [lis()])
    assert {item.body["spec"]["managementPolicy"] for item in default.resources} == {"ObserveOnly"}


def test_secrets_become_secret_key_refs_to_a_placeholder_named_after_the_resource() -> None:
    result = export([docker_dep()], [])
    (item,) = result.resources
    assert item.body["spec"]["secrets"] == [
        {
            "name": "OPENAI_API_KEY",
            "valueFrom": {"secretKeyRef": {"name": "img-bot", "key": "OPENAI_API_KEY"}},
        },
        {
            "name": "db.password",
            "valueFrom": {"secretKeyRef": {"name": "img-bot", "key": "db.password"}},
        },
    ]
    (secret,) = result.secrets
    assert (secret.name, secret.keys, secret.owner) == (
        "img-bot",
        ("OPENAI_API_KEY", "db.password"),
        "agentdeployment/img-bot",
    )
    assert "value" not in json.dumps(item.body["spec"]["secrets"]).replace("valueFrom", "")
    assert "<redacted>" not in json.dumps(item.body)  # the answers' mask is never exported


def test_no_secrets_no_placeholder() -> None:
    result = export([docker_dep(secrets=[])], [])
    assert "secrets" not in result.resources[0].body["spec"]
    assert result.secrets == []


def test_listener_ref_replaces_the_id_when_the_listener_is_exported_too() -> None:
    other = docker_dep(
        id="77777777-7777-4777-8777-777777777777",
        name="elsewhere",
        source_config={"listener_id": OTHER_LIS},
    )
    result = by_name(export([docker_dep(), other], [lis()]))
    config = result["agentdeployment/img-bot"]["spec"]["sourceConfig"]
    assert config["listenerRef"] == {"name": "cluster-a"}
    assert "listenerId" not in config
    assert result["agentdeployment/elsewhere"]["spec"]["sourceConfig"] == {"listenerId": OTHER_LIS}
    listener = result["listener/cluster-a"]
    assert listener["spec"] == {
        "managementPolicy": "ObserveOnly",
        "listenerId": LIS_ID,
        "computeType": "k8s",
        "computeId": "cluster-a",
        "computeConfig": {"k8sNamespaces": ["agents"], "node_pool": "gpu"},
        "version": "1",
    }


def test_listeners_come_first_then_deployments_each_sorted() -> None:
    deps = [
        docker_dep(id=f"1111111{i}-1111-4111-8111-111111111111", name=n)
        for i, n in enumerate("cab")
    ]
    result = export(deps, [lis()])
    assert [item.reference for item in result.resources] == [
        "listener/cluster-a",
        "agentdeployment/a",
        "agentdeployment/b",
        "agentdeployment/c",
    ]


def test_git_host_leaves_out_what_the_service_sets() -> None:
    spec = by_name(export([git_dep()], []))["agentdeployment/support-bot"]["spec"]
    assert spec["name"] == "Support_Bot"  # the exact name stays with the deployment
    assert spec["sourceConfig"] == {
        "integrationId": INTEGRATION,
        "repoUrl": "https://git.example.com/acme/support-bot",
        "buildOnPush": False,
        "deploymentType": "dev",
    }
    assert spec["sourceRevisionConfig"] == {"repoRef": "main", "graphConfigPath": "langgraph.json"}
    assert "secrets" not in spec  # an empty list: nothing to manage


def test_the_other_sources_fields_are_left_out_of_a_docker_spec() -> None:
    dep = docker_dep(
        source_config={"repo_url": "https://x", "deployment_type": "dev", "build_on_push": True},
        source_revision_config={"image_uri": "i:1", "repo_ref": "main"},
    )
    spec = deployment_cr(dep, "img-bot", Policy.FULL, {})["spec"]
    assert "sourceConfig" not in spec
    assert spec["sourceRevisionConfig"] == {"imageUri": "i:1"}


def test_what_an_agentdeployment_cannot_describe_is_skipped_with_its_reason() -> None:
    internal = docker_dep(
        id="88888888-8888-4888-8888-888888888888", name="cli-made", source="internal_source"
    )
    going = docker_dep(
        id="99999999-8888-4888-8888-888888888888", name="going", status="AWAITING_DELETE"
    )
    odd = docker_dep(
        id="aaaaaaaa-8888-4888-8888-888888888888", name="odd", secrets=[{"name": "a b"}]
    )
    result = export([internal, going, odd, docker_dep()], [])
    assert [item.reference for item in result.resources] == ["agentdeployment/img-bot"]
    reasons = {s.what.split(" (")[0]: s.reason for s in result.skipped}
    assert "git_host and external_docker only" in reasons["deployment cli-made"]
    assert reasons["deployment going"] == "it is being deleted"
    assert "'a b' cannot be a key of a Kubernetes Secret" in reasons["deployment odd"]


def test_namespace_is_set_on_every_object_when_given() -> None:
    result = export([docker_dep()], [lis()], namespace="team-a")
    assert {item.body["metadata"]["namespace"] for item in result.resources} == {"team-a"}


def test_cr_json_keeps_extra_fields_verbatim_and_drops_nulls() -> None:
    assert cr_json(lis(version=None)) == {
        "id": LIS_ID,
        "computeType": "k8s",
        "computeId": "cluster-a",
        "computeConfig": {"k8sNamespaces": ["agents"], "node_pool": "gpu"},
        "createdAt": "2026-01-02T03:04:05Z",
        "updatedAt": "2026-01-02T03:04:05Z",
    }


# ---------------------------------------------------------------------- names


@pytest.mark.parametrize(
    ("external", "label"),
    [
        ("agent-one", "agent-one"),
        ("Support_Bot", "support-bot"),
        ("my.bot v2!", "my-bot-v2"),
        ("--x--", "x"),
        ("a" * 80, "a" * 63),
        ("a" * 62 + "_b", "a" * 62),  # no trailing '-' after the cut
        ("___", "deployment-fallback"),
        ("ÄÖ", "deployment-fallback"),
    ],
)
def test_dns_label(external: str, label: str) -> None:
    assert dns_label(external, "deployment-fallback") == label


def test_colliding_names_all_get_their_id_as_suffix() -> None:
    a = UUID("1a2b3c4d-0000-4000-8000-000000000000")
    b = UUID("5e6f7a8b-0000-4000-8000-000000000000")
    c = UUID("99999999-0000-4000-8000-000000000000")
    names = unique_names([Named(a, "My_Bot"), Named(b, "my-bot"), Named(c, "other")], "deployment")
    assert names == {a: "my-bot-1a2b3c4d", b: "my-bot-5e6f7a8b", c: "other"}
    long = unique_names([Named(a, "x" * 70), Named(b, "x" * 64)], "deployment")
    assert long[a] == "x" * 54 + "-1a2b3c4d"
    assert all(len(n) <= 63 for n in long.values())


def test_a_name_with_nothing_usable_falls_back_to_the_kind_and_id() -> None:
    a = UUID("1a2b3c4d-0000-4000-8000-000000000000")
    assert unique_names([Named(a, "***")], "deployment") == {a: "deployment-1a2b3c4d"}


def test_a_suffix_equal_to_another_name_is_a_clear_error() -> None:
    a = UUID("1a2b3c4d-0000-4000-8000-000000000000")
    b = UUID("5e6f7a8b-0000-4000-8000-000000000000")
    c = UUID("99999999-0000-4000-8000-000000000000")
    with pytest.raises(ExportNameError, match="would both be named 'bot-1a2b3c4d'"):
        unique_names([Named(a, "bot"), Named(b, "Bot"), Named(c, "bot-1a2b3c4d")], "deployment")


def test_secret_placeholders_follow_the_suffixed_name() -> None:
    one = docker_dep(id="1a2b3c4d-0000-4000-8000-000000000000", name="Bot")
    two = docker_dep(id="5e6f7a8b-0000-4000-8000-000000000000", name="bot")
    result = export([one, two], [])
    assert [s.name for s in result.secrets] == ["bot-1a2b3c4d", "bot-5e6f7a8b"]
    ref = result.resources[0].body["spec"]["secrets"][0]["valueFrom"]["secretKeyRef"]
    assert ref["name"] == "bot-1a2b3c4d"
    assert result.resources[0].body["spec"]["name"] == "Bot"


# ------------------------------------------- what the operator makes of them


def _schema_unknowns(body: dict[str, Any]) -> list[str]:
    spec_schema = schema_root(body["kind"])["properties"]["spec"]
    return list(unknown_keys(body["spec"], spec_schema, "spec"))


def test_every_exported_field_is_in_the_crd_schema_nothing_would_be_pruned() -> None:
    result = export([docker_dep(), git_dep()], [lis()], Policy.FULL)
    for item in result.resources:
        assert _schema_unknowns(item.body) == [], item.reference


@pytest.mark.parametrize("kind", ["AgentDeployment", "Listener"])
def test_the_crds_have_the_management_policy_the_export_writes(kind: str) -> None:
    schema = schema_root(kind)["properties"]["spec"]["properties"]["managementPolicy"]
    assert {p.value for p in Policy} <= set(schema["enum"])


async def _desired_and_diff(
    dep: Deployment, listeners: list[Listener], *, known_hash: str | None
) -> Any:
    item = next(i for i in export([dep], listeners, Policy.FULL).resources if i.kind != "Listener")
    spec = AgentDeploymentSpec.model_validate(item.body["spec"])
    kube = FakeKube()
    for li in listeners:  # what the Listener's status says once observed
        kube.statuses[(NS, "listeners", li.compute_id)] = {"listenerId": str(li.id)}
    if item.secret is not None:
        kube.put_secret(NS, item.secret.name, {key: f"v-{key}" for key in item.secret.keys})
    mr = Managed(NS, item.name, "uid-1", 1, spec, AgentDeploymentStatus())
    async with ControlPlaneClient("http://unused.test", api_key="k") as client:
        desired = await Resolver(client, kube).resolve(mr)
    hash_now = desired.secrets_hash if known_hash == "current" else known_hash
    return desired, diff(desired, dep, hash_now)


@pytest.mark.parametrize("listeners", [[], [lis()]], ids=["listenerId", "listenerRef"])
async def test_an_exported_docker_deployment_resolves_to_no_patch(
    listeners: list[Listener],
) -> None:
    desired, delta = await _desired_and_diff(docker_dep(), listeners, known_hash="current")
    assert delta is None
    assert str(desired.body.source_config.listener_id) == LIS_ID


async def test_an_exported_git_deployment_resolves_to_no_patch() -> None:
    _, delta = await _desired_and_diff(git_dep(), [], known_hash=None)
    assert delta is None


async def test_an_exported_agents_deployment_resolves_to_no_patch() -> None:
    agent = {"agent_id": "support-bot", "environment": "staging"}
    dep = docker_dep(name="support-bot-staging", agent=agent)
    desired, delta = await _desired_and_diff(dep, [], known_hash="current")
    assert delta is None
    assert desired.body.agent is not None
    assert desired.body.name is None


async def test_secrets_are_the_one_thing_the_operator_cannot_compare() -> None:
    """Values are write-only: without the digest of what it last sent, the operator can
    only tell that the names match; the patch it would send carries nothing else."""
    _, delta = await _desired_and_diff(docker_dep(), [lis()], known_hash=None)
    assert delta is not None
    assert delta.fields == ("secrets",)


def test_an_exported_listener_wants_no_patch() -> None:
    listener = lis()
    (item,) = export([], [listener], Policy.FULL).resources
    spec = ListenerSpec.model_validate(item.body["spec"])
    check_identity(spec, listener)
    assert listener_diff(wanted(spec), listener) is None
    assert str(spec.listener_id) == LIS_ID


async def test_observe_only_takes_the_secrets_values_as_in_place_when_the_names_match() -> None:
    dep = docker_dep()
    item = export([dep], [], Policy.OBSERVE_ONLY).resources[0]
    spec = AgentDeploymentSpec.model_validate(item.body["spec"])
    mr = Managed(NS, item.name, "uid-1", 1, spec, AgentDeploymentStatus())
    kube = FakeKube()
    async with ControlPlaneClient("http://unused.test", api_key="k") as client:
        resolver = Resolver(client, kube)
        assert await resolver.secrets_in_place(mr, dep) is None  # no Secret yet
        kube.put_secret(NS, "img-bot", {"OPENAI_API_KEY": "a", "db.password": "b"})
        baseline = await resolver.secrets_in_place(mr, dep)
        # the digest a Full pass compares with: nothing to send
        assert baseline is not None
        assert diff(await resolver.resolve(mr), dep, baseline) is None
        # the service has one more secret than the spec names: not in place
        more = docker_dep(
            secrets=[{"name": "OPENAI_API_KEY"}, {"name": "db.password"}, {"name": "X"}]
        )
        assert await resolver.secrets_in_place(mr, more) is None
