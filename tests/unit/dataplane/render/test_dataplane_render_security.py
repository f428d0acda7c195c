"""Pod Security (render/security.py): every container the data plane renders declares
what the `restricted` standard asks; our own images (PostgreSQL, Redis) run as their
fixed non-root user on a read-only root with volumes for what they write; the user's
image keeps its own user; `pod_security: baseline` lets only the user's containers run
as root."""

from __future__ import annotations

from collections.abc import Iterator
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
)

from deployplane.api.dataplane import ServerRuntime
from deployplane.dataplane.render import (
    Autoscaler,
    DataPlaneSettings,
    PodSecurity,
    Rendered,
    SettingsError,
    render,
)
from deployplane.dataplane.render.backing import DATABASE_USER, REDIS_USER
from deployplane.dataplane.render.settings import from_env

USERS_CONTAINERS = {
    "init_containers": [{"name": "migrate", "image": "tool:1"}],
    "sidecars": [{"name": "proxy", "image": "envoy:1"}],
}
RUNTIME_DEFAULT = {"type": "RuntimeDefault"}


def rendered(
    spec: dict[str, Any] | None = None,
    runtime: ServerRuntime = ServerRuntime.POSTGRES,
    **settings: Any,
) -> Rendered:
    return render(
        make_deployment(spec),
        make_revision(),
        make_listener(),
        IMAGE,
        secret_values=SECRET_VALUES,
        database_password=PASSWORD,
        settings=DataPlaneSettings(**settings),
        runtime=runtime,
    )


def pods(r: Rendered) -> Iterator[tuple[str, dict[str, Any]]]:
    for obj in r.objects:
        if obj["kind"] in ("Deployment", "StatefulSet"):
            yield obj["metadata"]["name"], obj["spec"]["template"]["spec"]


def containers(pod: dict[str, Any]) -> list[dict[str, Any]]:
    return [*pod.get("initContainers", []), *pod["containers"]]


VARIANTS = {
    "postgres runtime": ({**USERS_CONTAINERS, "max_scale": 3}, ServerRuntime.POSTGRES, {}),
    "keda": ({"queue_max_scale": 3}, ServerRuntime.POSTGRES, {"autoscaler": Autoscaler.KEDA}),
    "in-memory runtime": (USERS_CONTAINERS, ServerRuntime.INMEM, {}),
}


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_every_pod_and_container_declares_what_restricted_asks(variant: str) -> None:
    """The fields Pod Security's `restricted` checks, pod by pod and container by
    container (the apiserver's admission judges the same on the dev cluster: e2e)."""
    spec, runtime, settings = VARIANTS[variant]
    found = dict(pods(rendered(spec, runtime, **settings)))
    assert found
    for name, pod in found.items():
        pod_context = pod["securityContext"]
        assert pod_context["seccompProfile"] == RUNTIME_DEFAULT, name
        for container in containers(pod):
            context = container["securityContext"]
            where = (name, container["name"])
            assert context["allowPrivilegeEscalation"] is False, where
            assert context["capabilities"] == {"drop": ["ALL"]}, where
            non_root = context.get("runAsNonRoot", pod_context.get("runAsNonRoot"))
            assert non_root is True, where
            assert context.get("runAsUser", pod_context.get("runAsUser")) != 0, where
            assert "privileged" not in context, where


@pytest.mark.parametrize(
    ("name", "kind", "user", "writable"),
    [
        (
            f"{BASE}-db",
            "StatefulSet",
            DATABASE_USER,
            {"/var/lib/postgresql/data", "/var/run/postgresql", "/tmp"},
        ),
        (f"{BASE}-redis", "Deployment", REDIS_USER, {"/data"}),
    ],
)
def test_our_images_run_as_their_user_on_a_read_only_root(
    name: str, kind: str, user: int, writable: set[str]
) -> None:
    pod = find(rendered(), kind, name)["spec"]["template"]["spec"]
    assert pod["securityContext"] == {
        "runAsNonRoot": True,
        "runAsUser": user,
        "runAsGroup": user,
        "fsGroup": user,
        "fsGroupChangePolicy": "OnRootMismatch",
        "seccompProfile": RUNTIME_DEFAULT,
    }
    (container,) = pod["containers"]
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    assert {m["mountPath"] for m in container["volumeMounts"]} == writable
    volumes = {v["name"] for v in pod.get("volumes", [])}
    claims = {
        t["metadata"]["name"]
        for t in find(rendered(), kind, name)["spec"].get("volumeClaimTemplates", [])
    }
    assert {m["name"] for m in container["volumeMounts"]} == volumes | claims


def test_the_users_image_keeps_its_user_but_may_not_be_root() -> None:
    """No runAsUser on the agent server or the queue: the image's USER decides; but
    runAsNonRoot, so the kubelet refuses a root one (rollout.py says why)."""
    r = rendered()
    for name in (BASE, f"{BASE}-queue"):
        pod = dig(find(r, "Deployment", name), "spec.template.spec")
        assert pod["securityContext"] == {"runAsNonRoot": True, "seccompProfile": RUNTIME_DEFAULT}
        context = pod["containers"][0]["securityContext"]
        assert "runAsUser" not in context
        assert "readOnlyRootFilesystem" not in context  # it writes where it was built to


def test_a_sidecars_own_security_context_wins_key_by_key() -> None:
    theirs = {"runAsUser": 1234, "capabilities": {"add": ["NET_BIND_SERVICE"], "drop": ["ALL"]}}
    r = rendered({"sidecars": [{"name": "proxy", "image": "envoy:1", "securityContext": theirs}]})
    sidecar = dig(find(r, "Deployment", BASE), "spec.template.spec.containers.1")
    assert sidecar["securityContext"] == {"allowPrivilegeEscalation": False, **theirs}


def test_baseline_lets_the_users_containers_run_as_root_and_keeps_our_images_restricted() -> None:
    r = rendered(USERS_CONTAINERS, pod_security=PodSecurity.BASELINE)
    for name in (BASE, f"{BASE}-queue"):
        pod = dig(find(r, "Deployment", name), "spec.template.spec")
        assert pod["securityContext"] == {"seccompProfile": RUNTIME_DEFAULT}
        for container in containers(pod):
            assert container["securityContext"] == {"allowPrivilegeEscalation": False}
    for name, kind, user in (
        (f"{BASE}-db", "StatefulSet", DATABASE_USER),
        (f"{BASE}-redis", "Deployment", REDIS_USER),
    ):
        pod = dig(find(r, kind, name), "spec.template.spec")
        assert pod["securityContext"]["runAsUser"] == user
        assert pod["containers"][0]["securityContext"]["capabilities"] == {"drop": ["ALL"]}


def test_pod_security_is_a_setting_of_the_agent() -> None:
    assert from_env({}).pod_security is PodSecurity.RESTRICTED
    assert from_env({"DEPLOYPLANE_POD_SECURITY": "Baseline"}).pod_security is PodSecurity.BASELINE
    with pytest.raises(SettingsError, match=r"DEPLOYPLANE_POD_SECURITY='privileged': expected"):
        from_env({"DEPLOYPLANE_POD_SECURITY": "privileged"})
