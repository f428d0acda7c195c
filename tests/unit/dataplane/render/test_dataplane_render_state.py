"""The in-memory server keeps its state on the deployment's claim: what the render makes
of it (render/state.py), and what it leaves to the vendor's runtime."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from tests.support.renderinputs import (
    BASE,
    IMAGE,
    PASSWORD,
    SECRET_VALUES,
    dig,
    find,
    make_deployment,
    make_listener,
    make_revision,
    server_container,
)

from deployplane.api.dataplane import ServerRuntime
from deployplane.dataplane.render import (
    DataPlaneSettings,
    PodSecurity,
    Rendered,
    RenderError,
    render,
    with_owner,
)
from deployplane.dataplane.render.state import (
    ANNOTATION_STATE,
    DRAIN_SECONDS,
    FLUSH_INTERVAL_SECONDS,
    GRACE_SECONDS,
    PRESTOP_SECONDS,
    STATE_DIR,
)

CLAIM = f"{BASE}-state"


def rendered(
    spec: dict[str, Any] | None = None,
    runtime: ServerRuntime = ServerRuntime.INMEM,
    revision: str | None = None,
) -> Rendered:
    rev = make_revision() if revision is None else make_revision(uuid.UUID(revision))
    return render(
        make_deployment(spec, secrets=["OPENAI_API_KEY"]),
        rev,
        make_listener(),
        IMAGE,
        secret_values=SECRET_VALUES,
        database_password=PASSWORD,
        runtime=runtime,
    )


def pod_spec(r: Rendered) -> dict[str, Any]:
    spec: dict[str, Any] = dig(find(r, "Deployment", BASE), "spec.template.spec")
    return spec


def test_the_claim_is_the_deployments_read_write_once_pod_with_the_default_size() -> None:
    claim = find(rendered(), "PersistentVolumeClaim", CLAIM)
    assert claim["spec"] == {
        "accessModes": ["ReadWriteOncePod"],
        "resources": {"requests": {"storage": "1Gi"}},
    }
    # owned by the owner ConfigMap, as everything else: it goes with the deployment
    (ref,) = claim["metadata"]["ownerReferences"]
    assert (ref["kind"], ref["name"]) == ("ConfigMap", BASE)
    (filled,) = with_owner([claim], "owner-uid")
    assert filled["metadata"]["ownerReferences"][0]["uid"] == "owner-uid"


def test_the_claims_size_is_db_storage_gi() -> None:
    claim = find(rendered({"db_storage_gi": 5}), "PersistentVolumeClaim", CLAIM)
    assert claim["spec"]["resources"]["requests"]["storage"] == "5Gi"
    with pytest.raises(RenderError, match="db_storage_gi must be at least 1"):
        rendered({"db_storage_gi": 0})


def test_a_new_revision_mounts_the_same_claim_unchanged() -> None:
    first = rendered(revision="22222222-0000-4000-8000-000000000003")
    second = rendered(revision="33333333-0000-4000-8000-000000000004")
    assert find(first, "PersistentVolumeClaim", CLAIM) == find(
        second, "PersistentVolumeClaim", CLAIM
    )
    for r in (first, second):
        volumes = {v["name"]: v for v in pod_spec(r)["volumes"]}
        assert volumes["langgraph-state"]["persistentVolumeClaim"] == {"claimName": CLAIM}


def test_the_claim_is_mounted_at_the_servers_state_directory() -> None:
    container = server_container(rendered())
    mounts = {m["mountPath"]: m["name"] for m in container["volumeMounts"]}
    assert mounts == {"/tmp": "langgraph-tmp", STATE_DIR: "langgraph-state"}
    assert STATE_DIR == "/tmp/langgraph-api/.langgraph_api"
    env = {e["name"]: e.get("value") for e in container["env"]}
    assert env["LANGGRAPH_DATA_DIR"] == "/tmp/langgraph-api"  # the server's working directory
    assert env["DEPLOYPLANE_DRAIN_SECONDS"] == str(DRAIN_SECONDS)


def test_one_pod_at_a_time_said_where_kubectl_describe_shows_it() -> None:
    server = find(rendered({"annotations": {"team": "a"}}), "Deployment", BASE)
    assert server["spec"]["replicas"] == 1
    assert server["spec"]["strategy"] == {"type": "Recreate"}
    annotations = server["metadata"]["annotations"]
    assert annotations["team"] == "a"
    said = annotations[ANNOTATION_STATE]
    for words in (CLAIM, "Recreate", "ReadWriteOncePod"):
        assert words in said
    assert f"every {FLUSH_INTERVAL_SECONDS} s" in said


def test_the_grace_period_covers_the_pause_the_drain_and_the_final_flush() -> None:
    pod = pod_spec(rendered())
    assert pod["terminationGracePeriodSeconds"] == GRACE_SECONDS
    assert GRACE_SECONDS >= PRESTOP_SECONDS + DRAIN_SECONDS + 10
    container = pod["containers"][0]
    assert container["lifecycle"]["preStop"] == {
        "exec": {"command": ["sleep", str(PRESTOP_SECONDS)]}
    }


def test_the_server_writes_as_its_group_on_a_read_only_root_never_as_root() -> None:
    pod = pod_spec(rendered())
    assert pod["securityContext"] == {
        "runAsNonRoot": True,
        "seccompProfile": {"type": "RuntimeDefault"},
        "fsGroup": 65534,
        "fsGroupChangePolicy": "OnRootMismatch",
    }
    assert pod["containers"][0]["securityContext"] == {
        "readOnlyRootFilesystem": True,
        "runAsNonRoot": True,
        "runAsUser": 65534,
        "runAsGroup": 65534,
        "allowPrivilegeEscalation": False,
        "capabilities": {"drop": ["ALL"]},
    }


def test_the_server_stays_restricted_when_the_agent_lets_user_images_run_as_root() -> None:
    """`pod_security: baseline` is for the user's root images; the in-memory server's is
    the agent base, whose user is known."""
    r = render(
        make_deployment(),
        make_revision(),
        make_listener(),
        IMAGE,
        secret_values=SECRET_VALUES,
        database_password="",
        settings=DataPlaneSettings(pod_security=PodSecurity.BASELINE),
        runtime=ServerRuntime.INMEM,
    )
    context = pod_spec(r)["containers"][0]["securityContext"]
    assert context["runAsUser"] == 65534
    assert context["runAsNonRoot"] is True
    assert context["capabilities"] == {"drop": ["ALL"]}


def test_more_than_one_replica_asked_is_run_as_one_and_said_why() -> None:
    r = rendered({"min_scale": 2, "max_scale": 5})
    assert find(r, "Deployment", BASE)["spec"]["replicas"] == 1
    assert not [o for o in r.objects if o["kind"] == "HorizontalPodAutoscaler"]
    (warning,) = r.warnings
    assert warning.reason == "OneReplica"
    said = warning.message
    assert said.startswith("resource_spec min_scale 2 and max_scale 5 runs as 1 replica")
    assert CLAIM in said
    assert rendered({"max_scale": 1}).warnings == ()
    assert rendered().warnings == ()


def test_the_vendors_runtime_has_no_claim_and_no_warning() -> None:
    r = rendered({"max_scale": 5}, runtime=ServerRuntime.POSTGRES)
    assert r.warnings == ()
    assert not [o for o in r.objects if o["kind"] == "PersistentVolumeClaim"]
    server = find(r, "Deployment", BASE)
    assert "strategy" not in server["spec"]
    assert ANNOTATION_STATE not in server["metadata"].get("annotations", {})


@pytest.mark.parametrize(
    ("spec", "clash"),
    [
        ({"volumes": [{"name": "langgraph-state", "emptyDir": {}}]}, "volume langgraph-state"),
        (
            {
                "volumes": [{"name": "mine", "emptyDir": {}}],
                "volume_mounts": [{"name": "mine", "mountPath": "/tmp"}],
            },
            "volume mount path /tmp",
        ),
    ],
)
def test_a_user_volume_in_the_states_place_is_refused(spec: dict[str, Any], clash: str) -> None:
    with pytest.raises(RenderError, match=f"{clash} clashes with one the data plane sets"):
        rendered(spec)


def test_a_secret_named_like_the_state_variables_is_refused() -> None:
    deployment = make_deployment(secrets=["LANGGRAPH_DATA_DIR"])
    with pytest.raises(RenderError, match="LANGGRAPH_DATA_DIR clashes"):
        render(
            deployment,
            make_revision(),
            make_listener(),
            IMAGE,
            secret_values={"LANGGRAPH_DATA_DIR": "/x"},
            database_password=PASSWORD,
            runtime=ServerRuntime.INMEM,
        )
