"""The API models hold every field and enum value of the spec, losslessly."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from pydantic import BaseModel, ValidationError

from deployplane.api.models import (
    TERMINAL_REVISION_STATUSES,
    ComputeType,
    Container,
    Deployment,
    DeploymentCreate,
    DeploymentPatch,
    DeploymentStatus,
    GitRepository,
    HTTPValidationError,
    Listener,
    ListenerCreate,
    ListenerPatch,
    ListenerPut,
    OAuthProvider,
    Page,
    ResourceSpec,
    Revision,
    RevisionStatus,
    Secret,
    Source,
    Volume,
    VolumeMount,
)
from deployplane.kinds.agentdeployment.spec import ManagedSource

NOW = "2025-01-02T03:04:05Z"
LATER = "2025-01-02T04:05:06.123456Z"

# The spec's ResourceSpec numeric fields, group by group, exactly as it lists them.
SPEC_NUMERIC_FIELDS = [
    *("min_scale", "max_scale", "cpu", "cpu_limit", "memory_mb", "memory_limit_mb"),
    *("queue_min_scale", "queue_max_scale", "queue_cpu", "queue_cpu_limit"),
    *("queue_memory_mb", "queue_memory_limit_mb"),
    *("orchestrator_cpu", "orchestrator_cpu_limit", "orchestrator_memory_mb"),
    *("orchestrator_memory_limit_mb", "orchestrator_min_scale", "orchestrator_max_scale"),
    "redis_memory_mb",
    *("db_cpu", "db_cpu_limit", "db_memory_mb", "db_memory_limit_mb", "db_storage_gi"),
    "db_max_connections",
]

VOLUME_MOUNT = {
    "name": "data",
    "mountPath": "/data",
    "subPath": "sub",
    "mountPropagation": "HostToContainer",
    "subPathExpr": "$(POD)",
    "readOnly": True,
}

CONTAINER = {
    "name": "init",
    "image": "busybox:1",
    "imagePullPolicy": "IfNotPresent",
    "workingDir": "/work",
    "restartPolicy": "Always",
    "command": ["sh", "-c"],
    "args": ["echo hi"],
    "env": [
        {"name": "A", "value": "1", "valueFrom": None},
        {"name": "B", "value": None, "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}},
    ],
    "envFrom": [{"configMapRef": {"name": "cm"}}],
    "resources": {"limits": {"cpu": "1"}, "requests": {"memory": "64Mi"}},
    "volumeMounts": [VOLUME_MOUNT],
    "securityContext": {"runAsNonRoot": True},
}

VOLUME = {
    "name": "data",
    "configMap": {"name": "cm"},
    "secret": {"secretName": "s"},
    "emptyDir": {},
    "persistentVolumeClaim": {"claimName": "pvc"},
    "nfs": {"server": "nfs", "path": "/x"},
    "projected": {"sources": []},
    "downwardAPI": {"items": []},
    "csi": {"driver": "d"},
}


def spec_number(index: int, name: str) -> float:
    """Distinct values, so a swapped or dropped field shows: fractions for the CPU fields
    (numbers in the published contract), whole numbers for the others (integers)."""
    return (index + 1) / 4 if "cpu" in name else index + 1


def resource_spec() -> dict[str, Any]:
    numbers: dict[str, Any] = {
        name: spec_number(i, name) for i, name in enumerate(SPEC_NUMERIC_FIELDS)
    }
    return {
        **numbers,
        "labels": {"team": "a"},
        "annotations": {"note": "x"},
        "service_account_name": "sa",
        "image_pull_secrets": [{"name": "regcred"}],
        "volumes": [VOLUME],
        "volume_mounts": [VOLUME_MOUNT],
        "init_containers": [CONTAINER],
        "sidecars": [{**CONTAINER, "name": "side"}],
    }


def source_config() -> dict[str, Any]:
    return {
        "integration_id": "44444444-4444-4444-8444-444444444444",
        "repo_url": "https://git.example/acme/agent",
        "build_on_push": False,
        "custom_url": "https://agent.example",
        "resource_spec": resource_spec(),
        "listener_id": "33333333-3333-4333-8333-333333333333",
        "listener_config": {"k8s_namespace": "team-a"},
        "install_command": "pip install .",
        "build_command": "make",
    }


def deployment() -> dict[str, Any]:
    return {
        "name": "agent",
        "source": "git_host",
        "source_config": source_config(),
        "source_revision_config": {
            "repo_ref": "refs/tags/v1",
            "graph_config_path": "graph.json",
            "image_uri": None,
            "repo_commit_sha": "abc123",
        },
        "secrets": [{"name": "TOKEN"}],
        "id": "11111111-1111-4111-8111-111111111111",
        "tenant_id": "99999999-9999-4999-8999-999999999999",
        "created_at": NOW,
        "updated_at": LATER,
        "status": "AWAITING_DATABASE",
        "latest_revision_id": "22222222-2222-4222-8222-222222222222",
        "active_revision_id": "22222222-2222-4222-8222-222222222223",
        "image_version": "0.4.1",
    }


def listener() -> dict[str, Any]:
    return {
        "compute_type": "k8s",
        "compute_id": "cluster-a",
        "compute_config": {"k8s_namespaces": ["a", "b"]},
        "id": "33333333-3333-4333-8333-333333333333",
        "created_at": NOW,
        "updated_at": NOW,
        "version": "v1",
    }


def oauth_provider() -> dict[str, Any]:
    return {
        "id": "p1",
        "organization_id": "org-1",
        "provider_id": "gh",
        "name": "Git host",
        "client_id": "cid",
        "auth_url": "https://auth",
        "token_url": "https://token",
        "uses_pkce": True,
        "code_challenge_method": "S256",
        "created_at": NOW,
        "updated_at": NOW,
        "provider_type": "oauth2",
    }


def round_trip(model: type[BaseModel], data: Any) -> Any:
    return model.model_validate(data).model_dump(mode="json", exclude_unset=True)


# ----------------------------------------------------------------- round trips


@pytest.mark.parametrize(
    ("model", "data"),
    [
        (Deployment, deployment()),
        (
            DeploymentCreate,
            {
                "name": "agent",
                "source": "git_host",
                "source_config": source_config(),
                "source_revision_config": {"repo_ref": "main", "graph_config_path": "g.json"},
                "secrets": [{"name": "TOKEN", "value": "s3cr3t"}],
            },
        ),
        (
            DeploymentPatch,
            {"source_revision_config": {"image_uri": "img:2"}, "secrets": []},
        ),
        (
            Revision,
            {
                "id": "22222222-2222-4222-8222-222222222222",
                "created_at": NOW,
                "updated_at": LATER,
                "status": "BUILDING",
                "source": "external_docker",
                "source_revision_config": {
                    "repo_ref": None,
                    "graph_config_path": None,
                    "image_uri": "img:1",
                    "repo_commit_sha": None,
                },
            },
        ),
        (Listener, listener()),
        (
            ListenerCreate,
            {
                "compute_type": "k8s",
                "compute_id": "c",
                "compute_config": {"k8s_namespaces": ["a"]},
                "version": "v1",
            },
        ),
        (ListenerPatch, {"version": "v2", "compute_config": {"k8s_namespaces": []}}),
        (ListenerPut, {"compute_type": "k8s", "compute_id": "c", "version": "v3"}),
        (
            GitRepository,
            {
                "host_integration_id": "44444444-4444-4444-8444-444444444444",
                "id": 12,
                "name": "agent",
                "owner": "acme",
                "url": "https://git.example/acme/agent",
                "default_branch": "main",
            },
        ),
        (OAuthProvider, oauth_provider()),
        (
            HTTPValidationError,
            {"detail": [{"loc": ["body", "secrets", 0], "msg": "bad", "type": "value_error"}]},
        ),
    ],
    ids=lambda v: v.__name__ if isinstance(v, type) else "",
)
def test_every_field_survives_json_to_model_to_json(model: type[BaseModel], data: Any) -> None:
    assert round_trip(model, copy.deepcopy(data)) == data


def test_resource_spec_models_every_spec_numeric_field() -> None:
    # The spec lists 25 (6 application, 6 queue, 6 orchestrator, 1 cache, 6 database).
    assert len(SPEC_NUMERIC_FIELDS) == 25
    missing = set(SPEC_NUMERIC_FIELDS) - set(ResourceSpec.model_fields)
    assert missing == set()
    spec = ResourceSpec.model_validate(resource_spec())
    for i, name in enumerate(SPEC_NUMERIC_FIELDS):
        assert getattr(spec, name) == spec_number(i, name), name


def test_resource_spec_keeps_integers_integral_and_fractions_fractional() -> None:
    dumped = ResourceSpec(cpu=2, cpu_limit=0.5).model_dump(mode="json", exclude_unset=True)
    assert dumped == {"cpu": 2, "cpu_limit": 0.5}
    assert isinstance(dumped["cpu"], int)


def test_kubernetes_shaped_models_keep_camel_case_names_on_both_sides() -> None:
    assert round_trip(VolumeMount, VOLUME_MOUNT) == VOLUME_MOUNT
    assert round_trip(Container, CONTAINER) == CONTAINER
    assert round_trip(Volume, VOLUME) == VOLUME
    assert set(VolumeMount.model_fields) == set(VOLUME_MOUNT)
    assert set(Container.model_fields) == set(CONTAINER)
    assert set(Volume.model_fields) == set(VOLUME)


# ---------------------------------------------------------------------- enums


def test_revision_status_has_exactly_the_spec_values() -> None:
    assert {s.value for s in RevisionStatus} == {
        *("CREATING", "QUEUED", "AWAITING_BUILD", "BUILDING", "AWAITING_DEPLOY"),
        *("DEPLOYING", "CREATE_FAILED", "BUILD_FAILED", "DEPLOY_FAILED", "DEPLOYED"),
        *("SKIPPED", "INTERRUPTED", "UNKNOWN"),
    }


def test_terminal_revision_statuses_are_deployed_failed_skipped_interrupted() -> None:
    assert {s.value for s in TERMINAL_REVISION_STATUSES} == {
        *("DEPLOYED", "CREATE_FAILED", "BUILD_FAILED", "DEPLOY_FAILED"),
        *("SKIPPED", "INTERRUPTED"),
    }
    assert RevisionStatus.BUILD_FAILED.is_terminal
    assert not RevisionStatus.UNKNOWN.is_terminal
    assert RevisionStatus.DEPLOY_FAILED.is_failure
    assert not RevisionStatus.SKIPPED.is_failure


def test_other_enums_have_exactly_the_spec_values() -> None:
    assert {s.value for s in DeploymentStatus} == {
        *("AWAITING_DATABASE", "READY", "UNUSED", "AWAITING_DELETE", "UNKNOWN"),
    }
    # the published contract's four (the internal_* ones are what the vendor's CLI makes)
    assert {s.value for s in Source} == {
        *("git_host", "external_docker", "internal_docker", "internal_source"),
    }
    # an AgentDeployment manages the two the operator can carry
    assert {s.value for s in ManagedSource} == {"git_host", "external_docker"}
    assert {c.value for c in ComputeType} == {"k8s"}


@pytest.mark.parametrize("status", [s.value for s in RevisionStatus])
def test_every_revision_status_parses_from_a_response(status: str) -> None:
    data = {
        "id": "22222222-2222-4222-8222-222222222222",
        "created_at": NOW,
        "updated_at": NOW,
        "status": status,
        "source": "git_host",
        "source_revision_config": {},
    }
    assert Revision.model_validate(data).status.value == status


def test_unknown_enum_value_is_refused() -> None:
    with pytest.raises(ValidationError):
        DeploymentCreate.model_validate({"name": "a", "source": "github"})


# --------------------------------------------------------------- OAuth provider


@pytest.mark.parametrize(
    "field",
    [
        *("id", "organization_id", "provider_id", "name", "client_id", "auth_url"),
        *("token_url", "uses_pkce", "code_challenge_method", "created_at", "updated_at"),
    ],
)
def test_oauth_provider_required_field_cannot_be_missing(field: str) -> None:
    data = oauth_provider()
    del data[field]
    with pytest.raises(ValidationError, match=field):
        OAuthProvider.model_validate(data)


def test_oauth_provider_type_is_optional_and_challenge_method_nullable() -> None:
    data = oauth_provider()
    del data["provider_type"]
    data["code_challenge_method"] = None
    provider = OAuthProvider.model_validate(data)
    assert provider.provider_type is None
    assert provider.code_challenge_method is None


# --------------------------------------------------- compatibility and safety


def test_unknown_response_fields_are_tolerated_at_every_level() -> None:
    data = deployment()
    data["brand_new_field"] = {"x": 1}
    data["source_config"]["future_knob"] = True
    data["source_config"]["resource_spec"]["gpu"] = 1
    data["source_revision_config"]["future_ref"] = "x"
    parsed = Deployment.model_validate(data)
    assert parsed.name == "agent"
    assert parsed.source_config is not None
    assert parsed.source_config.listener_config is not None
    assert parsed.source_config.listener_config.k8s_namespace == "team-a"


def test_listener_compute_config_keeps_fields_beyond_k8s_namespaces() -> None:
    data = listener()
    data["compute_config"]["node_selector"] = {"pool": "gpu"}
    assert round_trip(Listener, data)["compute_config"]["node_selector"] == {"pool": "gpu"}


def test_camel_case_input_is_accepted_and_dumped_as_snake_case() -> None:
    body = DeploymentCreate.model_validate(
        {
            "name": "agent",
            "source": "git_host",
            "sourceConfig": {
                "integrationId": "44444444-4444-4444-8444-444444444444",
                "repoUrl": "https://git.example/a",
                "buildOnPush": True,
                "listenerConfig": {"k8sNamespace": "ns"},
                "resourceSpec": {"minScale": 1, "dbStorageGi": 10, "initContainers": [CONTAINER]},
            },
            "sourceRevisionConfig": {"repoRef": "main", "graphConfigPath": "g.json"},
        }
    )
    assert body.model_dump(mode="json", exclude_unset=True) == {
        "name": "agent",
        "source": "git_host",
        "source_config": {
            "integration_id": "44444444-4444-4444-8444-444444444444",
            "repo_url": "https://git.example/a",
            "build_on_push": True,
            "listener_config": {"k8s_namespace": "ns"},
            "resource_spec": {"min_scale": 1, "db_storage_gi": 10, "init_containers": [CONTAINER]},
        },
        "source_revision_config": {"repo_ref": "main", "graph_config_path": "g.json"},
    }


def test_secret_repr_and_str_hide_the_value_even_inside_a_body() -> None:
    secret = Secret(name="TOKEN", value="hunter2-very-secret")
    body = DeploymentCreate(name="a", source=Source.EXTERNAL_DOCKER, secrets=[secret])
    for text in (repr(secret), str(secret), repr(body), str(body)):
        assert "hunter2-very-secret" not in text
    assert "TOKEN" in repr(secret)
    assert secret.value == "hunter2-very-secret"


def test_validation_error_entry_requires_loc_msg_and_type() -> None:
    for missing in ("loc", "msg", "type"):
        entry = {"loc": ["body"], "msg": "m", "type": "t"}
        del entry[missing]
        with pytest.raises(ValidationError):
            HTTPValidationError.model_validate({"detail": [entry]})


def test_page_requires_the_integer_offset_in_its_schema_and_reads_leniently() -> None:
    # The published contract: `offset` is always present and an integer.
    schema = Page[Listener].model_json_schema()
    assert "offset" in schema["required"]
    page = Page[Listener].model_validate({"resources": [listener()], "offset": 1})
    assert page.offset == 1
    # the client reads a body without it rather than fail a whole list
    assert Page[Listener].model_validate({"resources": [listener()]}).offset is None
    assert page.resources[0].compute_id == "cluster-a"
    assert Page[Listener].model_validate({"resources": [], "offset": 40}).offset == 40
