"""The per-kind diffs as pure functions: resolved spec + what the service returned ->
the PATCH to send (or None), with no client, no Kubernetes and no reconciler."""

from __future__ import annotations

from typing import Any

import pytest
from tests.support import apijson

from deployplane.api.models import Deployment, Listener, Secret, SecretReference, Source
from deployplane.crd.specs import ListenerSpec
from deployplane.externals.agentdeployment import DeploymentDelta, Desired, diff
from deployplane.externals.listener import diff as listener_diff
from deployplane.externals.listener.diff import wanted

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
