"""The per-kind diffs as pure functions: resolved spec + what the service returned ->
the PATCH to send (or None), with no client, no Kubernetes and no reconciler."""

from __future__ import annotations

from typing import Any

import pytest
from tests.support import apijson

from deployplane.api.models import Deployment, Listener, Secret, SecretReference, Source
from deployplane.externals.agentdeployment import DeploymentDelta, Desired, diff
from deployplane.externals.listener import diff as listener_diff
from deployplane.externals.listener.diff import wanted
from deployplane.kinds.listener.spec import ListenerSpec

DEP = "11111111-1111-4111-8111-111111111111"
LIS = "33333333-3333-4333-8333-333333333333"
NOW = "2026-01-01T00:00:00Z"
IMAGE = "registry.example.com/agent:1"


def deployment(**over: Any) -> Deployment:
    body: dict[str, Any] = {
        "id": DEP,
        "tenant_id": "99999999-9999-4999-8999-999999999999",
        "name": "agent",
        "source": "external_docker",
        "source_config": {"listener_id": LIS, "custom_url": None, "build_command": None},
        "source_revision_config": {"image_uri": IMAGE, "repo_ref": None},
        "secrets": [{"name": "A"}],
        "secret_references": None,
        "created_at": NOW,
        "updated_at": NOW,
        "status": "READY",
    }
    body.update(over)
    return Deployment.model_validate(body)


def desired(**over: Any) -> Desired:
    fields: dict[str, Any] = {
        "name": "agent",
        "source": Source.EXTERNAL_DOCKER,
        "source_config": {"listener_id": LIS},
        "revision_config": {"image_uri": IMAGE},
    }
    fields.update(over)
    return Desired.of(**fields)


def sent(delta: DeploymentDelta | None) -> tuple[dict[str, Any] | None, tuple[str, ...]]:
    if delta is None:
        return None, ()
    return delta.body.model_dump(mode="json", exclude_unset=True), delta.fields


A1 = [Secret(name="A", value="a1")]
REFS = [SecretReference(name="TOKEN", secret_name="tok", secret_key="t")]

CASES: dict[str, tuple[Desired, Deployment, str | None, Any]] = {
    "in sync (service nulls are 'not set')": (desired(), deployment(), None, (None, ())),
    "a source_config field differs: only it is sent": (
        desired(source_config={"listener_id": LIS, "custom_url": "https://a.example"}),
        deployment(),
        None,
        ({"source_config": {"custom_url": "https://a.example"}}, ("sourceConfig.customUrl",)),
    ),
    "the image differs": (
        desired(revision_config={"image_uri": "img:2"}),
        deployment(),
        None,
        ({"source_revision_config": {"image_uri": "img:2"}}, ("sourceRevisionConfig.imageUri",)),
    ),
    "secrets unchanged (same digest, same names): nothing": (
        desired(secrets=A1, secrets_hash="h1"),
        deployment(),
        "h1",
        (None, ()),
    ),
    "a secret value rotated (digest differs): all secrets sent": (
        desired(secrets=A1, secrets_hash="h2"),
        deployment(),
        "h1",
        ({"secrets": [{"name": "A", "value": "a1"}]}, ("secrets",)),
    ),
    "a secret name missing on the service: all secrets sent": (
        desired(secrets=A1, secrets_hash="h1"),
        deployment(secrets=[]),
        "h1",
        ({"secrets": [{"name": "A", "value": "a1"}]}, ("secrets",)),
    ),
    # The published Secret shape of an answer holds a `value`: never the value (the
    # emulator answers a mask, `<redacted>`), and never compared: the digest decides.
    "secrets answered with a masked value, digest unchanged: nothing": (
        desired(secrets=A1, secrets_hash="h1"),
        deployment(secrets=[{"name": "A", "value": "<redacted>"}]),
        "h1",
        (None, ()),
    ),
    "secrets answered with the desired value itself, digest changed: all sent": (
        desired(secrets=A1, secrets_hash="h2"),
        deployment(secrets=[{"name": "A", "value": "a1"}]),
        "h1",
        ({"secrets": [{"name": "A", "value": "a1"}]}, ("secrets",)),
    ),
    "secret references differ": (
        desired(secret_references=REFS),
        deployment(),
        None,
        (
            {"secret_references": [{"name": "TOKEN", "secret_name": "tok", "secret_key": "t"}]},
            ("secretReferences",),
        ),
    ),
}


@pytest.mark.parametrize(("want", "latest", "known", "expected"), CASES.values(), ids=CASES.keys())
def test_deployment_diff(
    want: Desired, latest: Deployment, known: str | None, expected: Any
) -> None:
    delta = diff(want, latest, known)
    assert sent(delta) == expected
    if delta is not None:
        assert delta.secrets_hash == want.secrets_hash
        assert "a1" not in repr(delta.fields)


def listener(**over: Any) -> Listener:
    return Listener.model_validate(apijson.listener_json(id=LIS, **over))


def test_listener_diff_sends_only_what_the_spec_sets_and_differs() -> None:
    spec = ListenerSpec.model_validate(
        {"computeType": "k8s", "computeId": "cluster-a", "version": "2"}
    )
    delta = listener_diff(wanted(spec), listener())
    assert delta is not None
    assert (delta.body.model_dump(exclude_unset=True), delta.fields) == (
        {"version": "2"},
        ("version",),
    )
    assert listener_diff(wanted(spec), listener(version="2")) is None


def test_a_listener_without_compute_config_is_created_with_an_empty_one() -> None:
    """The published create requires compute_config: a spec without one sends `{}`,
    and the listener's namespaces (set by someone else) are still not ours to manage."""
    spec = ListenerSpec.model_validate({"computeType": "k8s", "computeId": "cluster-a"})
    body = wanted(spec).model_dump(mode="json", exclude_unset=True)
    assert body == {"compute_type": "k8s", "compute_id": "cluster-a", "compute_config": {}}
    other = listener(compute_config={"k8s_namespaces": ["theirs"]})
    assert listener_diff(wanted(spec), other) is None


# What a PATCH does, in a plan's words (`revision_made`): the row `deployplane plan`
# shows and `status.pendingChange` records.
GIT_CONFIG = {"integration_id": "22222222-2222-4222-8222-222222222222", "repo_url": "https://g/r"}
GIT_REVISION = {"repo_ref": "main", "graph_config_path": "langgraph.json"}


def git_deployment(**over: Any) -> Deployment:
    return deployment(
        source="git_host",
        source_config=GIT_CONFIG,
        source_revision_config=GIT_REVISION,
        **over,
    )


def git_desired(**over: Any) -> Desired:
    fields: dict[str, Any] = {
        "source": Source.GIT_HOST,
        "source_config": GIT_CONFIG,
        "revision_config": GIT_REVISION,
        **over,
    }
    return desired(**fields)


RESOURCES = {"listener_id": LIS, "resource_spec": {"min_scale": 2}}
ChangeKind = tuple[Desired, Deployment, str | None, bool, tuple[str, tuple[str, ...]]]
CHANGE_KINDS: dict[str, ChangeKind] = {
    "a new image: new-revision (image)": (
        desired(revision_config={"image_uri": "img:2"}),
        deployment(),
        None,
        True,
        ("new-revision", ("image",)),
    ),
    "resources of a deployed revision: update, no revision": (
        desired(source_config=RESOURCES),
        deployment(),
        None,
        True,
        ("update", ()),
    ),
    "resources while the latest revision failed: new-revision (config), image resent": (
        desired(source_config=RESOURCES),
        deployment(),
        None,
        False,
        ("new-revision", ("config",)),
    ),
    "a secret rotated: new-revision (config)": (
        desired(secrets=A1, secrets_hash="h2"),
        deployment(),
        "h1",
        True,
        ("new-revision", ("config",)),
    ),
    "secret references: new-revision (config)": (
        desired(secret_references=REFS),
        deployment(),
        None,
        True,
        ("new-revision", ("config",)),
    ),
    "a new image and a secret: new-revision (image, config)": (
        desired(revision_config={"image_uri": "img:2"}, secrets=A1, secrets_hash="h2"),
        deployment(),
        "h1",
        True,
        ("new-revision", ("image", "config")),
    ),
    "git: a new ref: new-revision (source)": (
        git_desired(revision_config={**GIT_REVISION, "repo_ref": "release"}),
        git_deployment(),
        None,
        True,
        ("new-revision", ("source",)),
    ),
    "git: a new graph config path: rebuild (config), the same ref built again": (
        git_desired(revision_config={**GIT_REVISION, "graph_config_path": "g.json"}),
        git_deployment(),
        None,
        True,
        ("rebuild", ("config",)),
    ),
    "git: a secret rotated: rebuild (config)": (
        git_desired(secrets=A1, secrets_hash="h2"),
        git_deployment(),
        "h1",
        True,
        ("rebuild", ("config",)),
    ),
    "git: a build command on a deployed revision: update": (
        git_desired(source_config={**GIT_CONFIG, "build_command": "make"}),
        git_deployment(),
        None,
        True,
        ("update", ()),
    ),
    "git: a build command while the latest failed: rebuild (config), the ref resent": (
        git_desired(source_config={**GIT_CONFIG, "build_command": "make"}),
        git_deployment(),
        None,
        False,
        ("rebuild", ("config",)),
    ),
}


@pytest.mark.parametrize(
    ("want", "latest", "known", "deployed", "expected"),
    CHANGE_KINDS.values(),
    ids=CHANGE_KINDS.keys(),
)
def test_a_patch_says_what_it_makes(
    want: Desired,
    latest: Deployment,
    known: str | None,
    deployed: bool,
    expected: tuple[str, tuple[str, ...]],
) -> None:
    delta = diff(want, latest, known, deployed=deployed)
    assert delta is not None
    assert (delta.action, delta.reasons) == expected
    # What the PATCH carries agrees with it: a revision field is sent exactly when one
    # is made by the spec's rule (or the secrets, by the vendor's documentation).
    body = delta.body.model_dump(mode="json", exclude_none=True)
    makes = (
        bool(body.get("source_revision_config"))
        or "secrets" in body
        or ("secret_references" in body)
    )
    assert makes == (delta.action != "update")
