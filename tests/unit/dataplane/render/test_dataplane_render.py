"""The data plane's renderer: deployment + revision + listener -> manifests, field by field."""

from __future__ import annotations

import base64
import json
import uuid
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel
from tests.support.renderinputs import (
    BASE,
    DEPLOYMENT_ID,
    IMAGE,
    LISTENER_ID,
    PASSWORD,
    REVISION_ID,
    SECRET_VALUES,
    dig,
    find,
    make_deployment,
    make_listener,
    make_revision,
    server_container,
)

from deployplane.api.models import Deployment, Listener, ResourceSpec, Revision
from deployplane.dataplane.render import (
    ANNOTATION_REVISION_ID,
    FIELD_MAP,
    LABEL_DEPLOYMENT_ID,
    OWNER_UID_PLACEHOLDER,
    Rendered,
    RenderError,
    base_name,
    cpu_quantity,
    database_secret_name,
    memory_quantity,
    namespace_for,
    render,
    with_owner,
)

# Field names of the published contract's ResourceSpec (published-contract.json,
# `ResourceSpec-Output`): the renderer must say what each one becomes.
PUBLISHED_RESOURCE_SPEC_FIELDS = [
    "min_scale",
    "max_scale",
    "cpu",
    "cpu_limit",
    "memory_mb",
    "memory_limit_mb",
    "queue_min_scale",
    "queue_max_scale",
    "queue_cpu",
    "queue_cpu_limit",
    "queue_memory_mb",
    "queue_memory_limit_mb",
    "orchestrator_cpu",
    "orchestrator_cpu_limit",
    "orchestrator_memory_mb",
    "orchestrator_memory_limit_mb",
    "orchestrator_min_scale",
    "orchestrator_max_scale",
    "executor_cpu",
    "executor_cpu_limit",
    "executor_memory_mb",
    "executor_memory_limit_mb",
    "redis_cpu",
    "redis_cpu_limit",
    "redis_memory_mb",
    "redis_memory_limit_mb",
    "labels",
    "annotations",
    "service_account_name",
    "image_pull_secrets",
    "volumes",
    "volume_mounts",
    "init_containers",
    "sidecars",
    "db_cpu",
    "db_cpu_limit",
    "db_memory_mb",
    "db_memory_limit_mb",
    "db_storage_gi",
    "db_max_connections",
]


def do_render(
    deployment: Deployment | None = None,
    *,
    revision: Revision | None = None,
    listener: Listener | None = None,
    secret_values: dict[str, str] | None = None,
) -> Rendered:
    return render(
        deployment or make_deployment(),
        revision or make_revision(),
        listener or make_listener(),
        IMAGE,
        secret_values=SECRET_VALUES if secret_values is None else secret_values,
        database_password=PASSWORD,
    )


# --------------------------------------------------------------------------- namespace


@pytest.mark.parametrize(
    ("namespaces", "wanted", "expected"),
    [
        (["agents", "team-b"], "agents", "agents"),
        (["agents", "team-b"], "team-b", "team-b"),
        (["agents", "team-b"], None, "agents"),  # unset: the listener's first namespace
    ],
)
def test_namespace_is_the_listener_config_one_or_the_listeners_first(
    namespaces: list[str], wanted: str | None, expected: str
) -> None:
    rendered = do_render(make_deployment(namespace=wanted), listener=make_listener(namespaces))
    assert rendered.namespace == expected
    assert rendered.owner["metadata"]["namespace"] == expected
    assert {o["metadata"]["namespace"] for o in rendered.objects} == {expected}


@pytest.mark.parametrize(
    ("namespaces", "wanted", "message"),
    [
        (
            ["agents", "team-b"],
            "prod",
            f"namespace prod is not one of listener {LISTENER_ID}'s namespaces: agents, team-b",
        ),
        ([], "agents", f"listener {LISTENER_ID} has no k8s_namespaces to deploy into"),
        ([], None, f"listener {LISTENER_ID} has no k8s_namespaces to deploy into"),
    ],
)
def test_namespace_outside_the_listener_is_a_render_error(
    namespaces: list[str], wanted: str | None, message: str
) -> None:
    with pytest.raises(RenderError) as info:
        do_render(make_deployment(namespace=wanted), listener=make_listener(namespaces))
    assert str(info.value) == message


# --------------------------------------------------------------------------- field by field

SERVER = ("Deployment", BASE)
QUEUE = ("Deployment", f"{BASE}-queue")
REDIS = ("Deployment", f"{BASE}-redis")
DB = ("StatefulSet", f"{BASE}-db")
HPA = ("HorizontalPodAutoscaler", BASE)
QUEUE_HPA = ("HorizontalPodAutoscaler", f"{BASE}-queue")
APP = "spec.template.spec.containers.0"
PG = "spec.template.spec.containers.0"
# What every container the data plane renders declares (render/security.py).
RESTRICTED = {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}

FIELD_CASES: list[tuple[dict[str, Any], tuple[str, str], str, Any]] = [
    ({"min_scale": 3}, SERVER, "spec.replicas", 3),
    ({}, SERVER, "spec.replicas", 1),
    ({"min_scale": 2, "max_scale": 5}, HPA, "spec.minReplicas", 2),
    ({"min_scale": 2, "max_scale": 5}, HPA, "spec.maxReplicas", 5),
    ({"min_scale": 2, "max_scale": 5}, HPA, "spec.scaleTargetRef.name", BASE),
    ({"cpu": 0.5}, SERVER, f"{APP}.resources.requests.cpu", "500m"),
    ({"cpu": 2}, SERVER, f"{APP}.resources.requests.cpu", "2"),
    ({"cpu_limit": 1.25}, SERVER, f"{APP}.resources.limits.cpu", "1250m"),
    ({"memory_mb": 512}, SERVER, f"{APP}.resources.requests.memory", "512M"),
    ({"memory_limit_mb": 1024}, SERVER, f"{APP}.resources.limits.memory", "1024M"),
    ({"queue_min_scale": 4}, QUEUE, "spec.replicas", 4),
    ({}, QUEUE, "spec.replicas", 1),
    ({"queue_min_scale": 1, "queue_max_scale": 6}, QUEUE_HPA, "spec.maxReplicas", 6),
    ({"queue_cpu": 0.25}, QUEUE, f"{APP}.resources.requests.cpu", "250m"),
    ({"queue_cpu_limit": 1}, QUEUE, f"{APP}.resources.limits.cpu", "1"),
    ({"queue_memory_mb": 256}, QUEUE, f"{APP}.resources.requests.memory", "256M"),
    ({"queue_memory_limit_mb": 300}, QUEUE, f"{APP}.resources.limits.memory", "300M"),
    ({"redis_memory_mb": 128}, REDIS, f"{APP}.resources.requests.memory", "128M"),
    ({"redis_memory_mb": 128}, REDIS, f"{APP}.resources.limits.memory", "128M"),
    (
        {"redis_memory_mb": 128},
        REDIS,
        f"{APP}.args",
        ["--maxmemory", "115200000", "--maxmemory-policy", "allkeys-lru"],
    ),
    ({"db_cpu": 1}, DB, f"{PG}.resources.requests.cpu", "1"),
    ({"db_cpu_limit": 2}, DB, f"{PG}.resources.limits.cpu", "2"),
    ({"db_memory_mb": 1000}, DB, f"{PG}.resources.requests.memory", "1000M"),
    ({"db_memory_limit_mb": 2000}, DB, f"{PG}.resources.limits.memory", "2000M"),
    (
        {"db_storage_gi": 20},
        DB,
        "spec.volumeClaimTemplates.0.spec.resources.requests.storage",
        "20Gi",
    ),
    ({}, DB, "spec.volumeClaimTemplates.0.spec.resources.requests.storage", "1Gi"),
    ({"db_max_connections": 150}, DB, f"{PG}.args", ["-c", "max_connections=150"]),
    ({"labels": {"team": "ml"}}, SERVER, "metadata.labels.team", "ml"),
    ({"labels": {"team": "ml"}}, SERVER, "spec.template.metadata.labels.team", "ml"),
    ({"labels": {"team": "ml"}}, QUEUE, "spec.template.metadata.labels.team", "ml"),
    ({"annotations": {"a.io/x": "1"}}, SERVER, "metadata.annotations", {"a.io/x": "1"}),
    ({"annotations": {"a.io/x": "1"}}, SERVER, "spec.template.metadata.annotations.a\\.io/x", "1"),
    ({"service_account_name": "runner"}, SERVER, "spec.template.spec.serviceAccountName", "runner"),
    ({"service_account_name": "runner"}, QUEUE, "spec.template.spec.serviceAccountName", "runner"),
    (
        {"image_pull_secrets": [{"name": "regcred"}]},
        SERVER,
        "spec.template.spec.imagePullSecrets",
        [{"name": "regcred"}],
    ),
    (
        {"volumes": [{"name": "cfg", "configMap": {"name": "app-cfg"}}]},
        SERVER,
        "spec.template.spec.volumes",
        [{"name": "cfg", "configMap": {"name": "app-cfg"}}],
    ),
    (
        {"volume_mounts": [{"name": "cfg", "mountPath": "/etc/app", "readOnly": True}]},
        SERVER,
        f"{APP}.volumeMounts",
        [{"name": "cfg", "mountPath": "/etc/app", "readOnly": True}],
    ),
    (
        {"init_containers": [{"name": "migrate", "image": "tool:1", "args": ["up"]}]},
        SERVER,
        "spec.template.spec.initContainers",
        [{"name": "migrate", "image": "tool:1", "args": ["up"], "securityContext": RESTRICTED}],
    ),
    (
        {"sidecars": [{"name": "proxy", "image": "envoy:1", "env": [{"name": "A", "value": "b"}]}]},
        SERVER,
        "spec.template.spec.containers.1",
        {
            "name": "proxy",
            "image": "envoy:1",
            "env": [{"name": "A", "value": "b"}],
            "securityContext": RESTRICTED,
        },
    ),
]


def _dig_escaped(obj: Any, path: str) -> Any:
    # "a\\.io/x" addresses a key containing a dot.
    parts = [p.replace("\0", ".") for p in path.replace("\\.", "\0").split(".")]
    for part in parts:
        obj = obj[int(part)] if isinstance(obj, list) else obj[part]
    return obj


@pytest.mark.parametrize(
    ("resource_spec", "target", "path", "expected"),
    FIELD_CASES,
    ids=[f"{next(iter(c[0]), 'default')}->{c[1][0]}.{c[2]}" for c in FIELD_CASES],
)
def test_resource_spec_field_becomes(
    resource_spec: dict[str, Any], target: tuple[str, str], path: str, expected: Any
) -> None:
    rendered = do_render(make_deployment(resource_spec))
    assert _dig_escaped(find(rendered, *target), path) == expected


@pytest.mark.parametrize(
    ("resource_spec", "present"),
    [
        ({}, set()),
        ({"max_scale": 4}, {BASE}),
        ({"min_scale": 0, "max_scale": 4}, set()),  # scaled to zero: nothing to autoscale
        ({"queue_max_scale": 3}, {f"{BASE}-queue"}),
        ({"max_scale": 2, "queue_max_scale": 3}, {BASE, f"{BASE}-queue"}),
    ],
)
def test_hpa_only_when_a_maximum_is_given(resource_spec: dict[str, Any], present: set[str]) -> None:
    rendered = do_render(make_deployment(resource_spec))
    hpas = {
        o["metadata"]["name"] for o in rendered.objects if o["kind"] == "HorizontalPodAutoscaler"
    }
    assert hpas == present


def test_unset_resources_leave_no_resources_block() -> None:
    assert "resources" not in server_container(do_render())


def test_the_image_and_revision_roll_the_server_and_queue() -> None:
    first = do_render()
    second = do_render(revision=make_revision(uuid.UUID(int=7)))
    for name in (BASE, f"{BASE}-queue"):
        before = find(first, "Deployment", name)
        after = find(second, "Deployment", name)
        assert dig(before, "spec.template.spec.containers.0.image") == IMAGE
        annotations = dig(before, "spec.template.metadata.annotations")
        assert annotations[ANNOTATION_REVISION_ID] == str(REVISION_ID)
        assert dig(after, "spec.template.metadata.annotations")[ANNOTATION_REVISION_ID] == str(
            uuid.UUID(int=7)
        )
        # The selector is immutable in Kubernetes: it must not follow the revision.
        assert before["spec"]["selector"] == after["spec"]["selector"]
    assert first.owner["data"]["revision-id"] == str(REVISION_ID)


def test_user_labels_cannot_take_over_the_selector_labels() -> None:
    rendered = do_render(make_deployment({"labels": {LABEL_DEPLOYMENT_ID: "forged"}}))
    server = find(rendered, *SERVER)
    assert server["spec"]["template"]["metadata"]["labels"][LABEL_DEPLOYMENT_ID] == str(
        DEPLOYMENT_ID
    )


@pytest.mark.parametrize(
    ("resource_spec", "message"),
    [
        ({"min_scale": 3, "max_scale": 2}, "resource_spec.max_scale 2 is below the minimum 3"),
        ({"labels": {"team": 3}}, "resource_spec.labels.team must be a string"),
        ({"sidecars": [{"name": "x"}]}, "resource_spec.sidecars[0] needs a name and an image"),
        (
            {"init_containers": [{"image": "x:1"}]},
            "resource_spec.init_containers[0] needs a name and an image",
        ),
    ],
)
def test_bad_resource_spec_is_a_render_error(resource_spec: dict[str, Any], message: str) -> None:
    with pytest.raises(RenderError) as info:
        do_render(make_deployment(resource_spec))
    assert str(info.value) == message


# --------------------------------------------------------------------------- secrets and env


def _env(container: dict[str, Any]) -> dict[str, Any]:
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in container["env"]}


def test_secrets_become_an_owned_secret_and_secret_key_refs() -> None:
    rendered = do_render(make_deployment(secrets=["OTHER", "OPENAI_API_KEY"]))
    secret = find(rendered, "Secret", f"{BASE}-secrets")
    assert secret["data"] == {
        "OPENAI_API_KEY": base64.b64encode(b"sk-very-secret").decode(),
        "OTHER": base64.b64encode(b"two").decode(),
    }
    assert secret["metadata"]["ownerReferences"][0]["name"] == BASE
    for container in (server_container(rendered), server_container(rendered, f"{BASE}-queue")):
        env = _env(container)
        assert env["OPENAI_API_KEY"] == {
            "secretKeyRef": {"name": f"{BASE}-secrets", "key": "OPENAI_API_KEY"}
        }
        assert env["OTHER"] == {"secretKeyRef": {"name": f"{BASE}-secrets", "key": "OTHER"}}
    # No value anywhere but the Secret's data.
    for obj in [rendered.owner, *rendered.objects]:
        if obj["kind"] != "Secret":
            assert "sk-very-secret" not in json.dumps(obj)
            assert PASSWORD not in json.dumps(obj)


def test_only_the_deployments_secrets_are_written() -> None:
    rendered = do_render(make_deployment(secrets=["OTHER"]))
    assert set(find(rendered, "Secret", f"{BASE}-secrets")["data"]) == {"OTHER"}


def test_a_secret_without_value_is_a_render_error_naming_it() -> None:
    with pytest.raises(RenderError) as info:
        do_render(make_deployment(secrets=["MISSING"]))
    assert str(info.value) == f"secret MISSING has no value for deployment {DEPLOYMENT_ID}"


def test_a_secret_named_like_a_data_plane_variable_is_refused() -> None:
    with pytest.raises(RenderError, match="secret DATABASE_URI clashes"):
        do_render(make_deployment(secrets=["DATABASE_URI"]), secret_values={"DATABASE_URI": "x"})


class SecretReference(BaseModel):
    name: str
    secret_name: str
    secret_key: str


class DeploymentWithReferences(Deployment):
    """The published contract's `secret_references` (issue 13), until our model has it."""

    secret_references: list[SecretReference] | None = None


def test_secret_references_become_secret_key_refs() -> None:
    base = make_deployment(secrets=["OTHER"]).model_dump()
    base["secret_references"] = [
        {"name": "DB_TOKEN", "secret_name": "existing", "secret_key": "token"},
    ]
    rendered = do_render(DeploymentWithReferences.model_validate(base))
    env = _env(server_container(rendered))
    assert env["DB_TOKEN"] == {"secretKeyRef": {"name": "existing", "key": "token"}}
    assert env["OTHER"] == {"secretKeyRef": {"name": f"{BASE}-secrets", "key": "OTHER"}}


def test_a_name_in_both_secrets_and_secret_references_is_refused() -> None:
    base = make_deployment(secrets=["OTHER"]).model_dump()
    base["secret_references"] = [{"name": "OTHER", "secret_name": "s", "secret_key": "k"}]
    with pytest.raises(RenderError, match="environment variable OTHER is set twice"):
        do_render(DeploymentWithReferences.model_validate(base))


def test_database_and_redis_are_wired_without_the_password_in_clear() -> None:
    rendered = do_render()
    env = _env(server_container(rendered))
    assert env["DATABASE_PASSWORD"] == {"secretKeyRef": {"name": f"{BASE}-db", "key": "password"}}
    assert env["DATABASE_URI"] == (
        f"postgres://postgres:$(DATABASE_PASSWORD)@{BASE}-db:5432/postgres?sslmode=disable"
    )
    assert env["REDIS_URI"] == f"redis://{BASE}-redis:6379"
    assert find(rendered, "Secret", f"{BASE}-db")["data"] == {
        "password": base64.b64encode(PASSWORD.encode()).decode()
    }
    pg_env = _env(dig(find(rendered, *DB), PG))
    assert pg_env["POSTGRES_PASSWORD"] == {
        "secretKeyRef": {"name": f"{BASE}-db", "key": "password"}
    }


def test_an_empty_database_password_is_refused() -> None:
    with pytest.raises(RenderError, match="needs a database password"):
        render(
            make_deployment(),
            make_revision(),
            make_listener(),
            IMAGE,
            secret_values={},
            database_password="",
        )


def test_repr_names_objects_but_never_prints_values() -> None:
    rendered = do_render(make_deployment(secrets=["OPENAI_API_KEY"]))
    text = repr(rendered) + str(rendered)
    assert f"Secret/{BASE}-secrets" in text
    assert "sk-very-secret" not in text
    assert base64.b64encode(b"sk-very-secret").decode() not in text


# --------------------------------------------------------------------------- owner


def test_owner_is_one_configmap_naming_the_deployment() -> None:
    owner = do_render().owner
    assert owner["kind"] == "ConfigMap"
    assert owner["metadata"]["name"] == BASE
    assert owner["metadata"]["labels"][LABEL_DEPLOYMENT_ID] == str(DEPLOYMENT_ID)
    assert owner["data"]["deployment-id"] == str(DEPLOYMENT_ID)
    assert "ownerReferences" not in owner["metadata"]


def test_every_object_refers_to_the_owner_and_with_owner_fills_the_uid() -> None:
    rendered = do_render()
    kinds = sorted((o["kind"], o["metadata"]["name"]) for o in rendered.objects)
    assert kinds == sorted(
        [
            ("Secret", f"{BASE}-secrets"),
            ("Secret", f"{BASE}-db"),
            ("Deployment", BASE),
            ("Service", BASE),
            ("NetworkPolicy", BASE),
            ("Deployment", f"{BASE}-queue"),
            ("Deployment", f"{BASE}-redis"),
            ("Service", f"{BASE}-redis"),
            ("StatefulSet", f"{BASE}-db"),
            ("Service", f"{BASE}-db"),
        ]
    )
    for obj in rendered.objects:
        (ref,) = obj["metadata"]["ownerReferences"]
        assert ref == {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "name": BASE,
            "uid": OWNER_UID_PLACEHOLDER,
            "controller": True,
            "blockOwnerDeletion": True,
        }
    filled = with_owner(rendered.objects, "uid-123")
    assert all(o["metadata"]["ownerReferences"][0]["uid"] == "uid-123" for o in filled)
    # Pure: the rendered objects still carry the placeholder.
    assert all(
        o["metadata"]["ownerReferences"][0]["uid"] == OWNER_UID_PLACEHOLDER
        for o in rendered.objects
    )


def test_with_owner_refuses_an_empty_uid() -> None:
    with pytest.raises(ValueError, match="apply the owner first"):
        with_owner(do_render().objects, "")


def test_database_claims_are_deleted_with_the_statefulset() -> None:
    statefulset = find(do_render(), *DB)
    assert statefulset["spec"]["persistentVolumeClaimRetentionPolicy"]["whenDeleted"] == "Delete"
    assert statefulset["spec"]["serviceName"] == f"{BASE}-db"
    assert find(do_render(), "Service", f"{BASE}-db")["spec"]["clusterIP"] == "None"


# --------------------------------------------------------------------------- determinism and names


def test_same_input_renders_identical_objects() -> None:
    spec = {"min_scale": 2, "max_scale": 4, "cpu": 0.5, "labels": {"b": "2", "a": "1"}}
    first = do_render(make_deployment(spec, secrets=["OTHER", "OPENAI_API_KEY"]))
    second = do_render(make_deployment(spec, secrets=["OPENAI_API_KEY", "OTHER"]))
    assert json.dumps([first.owner, *first.objects]) == json.dumps([second.owner, *second.objects])


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("My Agent", "my-agent-0badc0de"),
        ("my_agent.v2", "my-agent-v2-0badc0de"),
        ("42-things", "d-42-things-0badc0de"),
        ("!!!", "d-0badc0de"),
        ("x" * 100, "x" * 36 + "-0badc0de"),
    ],
)
def test_base_name_is_a_valid_stable_kubernetes_name(name: str, expected: str) -> None:
    assert base_name(make_deployment(name=name)) == expected


def test_every_name_fits_a_dns_label() -> None:
    rendered = do_render(make_deployment(name="y" * 200))
    for obj in [rendered.owner, *rendered.objects]:
        # Services are DNS-1035 labels (<= 63); a StatefulSet's name plus "-" and a
        # 10-character hash is a label value (<= 63), so it must stay within 52.
        limit = 52 if obj["kind"] == "StatefulSet" else 63
        assert len(obj["metadata"]["name"]) <= limit


@pytest.mark.parametrize(
    ("value", "cpu", "memory"),
    [(0.1, "100m", "100k"), (1, "1", "1M"), (1.5, "1500m", "1500k"), (0.002, "2m", "2k")],
)
def test_quantities(value: float, cpu: str, memory: str) -> None:
    assert cpu_quantity(value) == cpu
    assert memory_quantity(value) == memory


def test_every_resource_spec_field_is_mapped() -> None:
    assert set(ResourceSpec.model_fields) <= set(FIELD_MAP)
    assert set(PUBLISHED_RESOURCE_SPEC_FIELDS) <= set(FIELD_MAP)


def test_no_image_is_a_render_error() -> None:
    with pytest.raises(RenderError, match="has no image"):
        render(
            make_deployment(),
            make_revision(),
            make_listener(),
            "",
            secret_values={},
            database_password="p",
        )


def test_docs_list_every_field() -> None:
    docs = (Path(__file__).parents[4] / "docs" / "dataplane.md").read_text()
    for field, becomes in FIELD_MAP.items():
        assert f"| `{field}` | {becomes} |" in docs, field


def test_namespace_and_database_secret_are_known_without_rendering() -> None:
    deployment = make_deployment(namespace="team-b")
    rendered = do_render(deployment)
    assert namespace_for(deployment, make_listener()) == rendered.namespace == "team-b"
    assert find(rendered, "Secret", database_secret_name(deployment))["data"]["password"]
    with pytest.raises(RenderError, match="is not one of listener"):
        namespace_for(make_deployment(namespace="prod"), make_listener())
