"""Files for create/update/apply: checked locally and named precisely (strict fields,
syntax errors with line and column, one message per field, image references), and
planned against the resource as it is (`planning`: only what differs is sent)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from tests.support import cli_service
from tests.support.cli_service import DEP_ID, FakeService, assert_one_error_line, deployment, run

from deployplane.api.imageref import image_reference_error
from deployplane.api.models import Deployment, DeploymentAgent, Listener
from deployplane.cli.commands.edit import planning

service = cli_service.service

GIT = {
    "source": "git_host",
    "source_config": {
        "integration_id": "44444444-4444-4444-8444-444444444444",
        "repo_url": "https://git.example/acme/agent",
        "custom_url": "https://agent-one.example.app",
        "resource_spec": {"min_scale": 1, "cpu": 0.5},
    },
    "source_revision_config": {
        "repo_ref": "main",
        "graph_config_path": "langgraph.json",
        "repo_commit_sha": "abc123",
    },
    "secrets": [{"name": "OPENAI_API_KEY"}, {"name": "TOKEN"}],
}


def as_get_yaml(body: dict[str, Any]) -> dict[str, Any]:
    """What `get -o yaml` prints for `body`: the model's full dump, nulls included."""
    dumped: dict[str, Any] = yaml.safe_load(
        yaml.safe_dump(Deployment.model_validate(body).model_dump(mode="json"))
    )
    return dumped


# ------------------------------------------------------------------ bad input


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "name: a\nsource_revision_config: {imag_uri: 'x:1'}\n",
            'unknown field "source_revision_config.imag_uri" (did you mean "image_uri"?)',
        ),
        ("nmae: a\n", 'unknown field "nmae" (did you mean "name"?)'),
        (
            "source_config: {resource_spec: {min_scale: 1, sidecars: [{name: s, imag: x}]}}\n",
            'unknown field "source_config.resource_spec.sidecars.imag" (did you mean "image"?)',
        ),
        ("zzz: 1\n", 'unknown field "zzz"'),
    ],
)
def test_unknown_fields_are_refused_like_kubectl_strict_validation(
    service: FakeService, text: str, message: str
) -> None:
    result = run("deployments", "update", DEP_ID, "-f", "-", stdin=text)
    assert result.exit_code == 2
    assert assert_one_error_line(result) == f"error: stdin: {message}"
    assert service.requests == []


def test_the_read_only_fields_of_get_are_known(service: FakeService) -> None:
    service.on("GET", f"/v2/deployments/{DEP_ID}", [httpx.Response(200, json=deployment())])
    text = yaml.safe_dump(as_get_yaml(deployment()))
    result = run("deployments", "update", DEP_ID, "-f", "-", stdin=text)
    assert result.exit_code == 0, result.output
    assert [r.method for r in service.requests] == ["GET"]  # nothing differs: no PATCH
    assert "deployment/agent-one unchanged" in result.stderr


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"name": "x",\n "source": }', "stdin is not valid JSON: line 2, column 12"),
        ("name: x\n  source: [\n", "stdin is not valid YAML: line 2, column 9"),
        ("name: [unclosed\n", "stdin is not valid YAML: line 2, column 1"),
    ],
)
def test_syntax_errors_name_line_and_column(service: FakeService, text: str, message: str) -> None:
    result = run("deployments", "create", "-f", "-", stdin=text)
    assert result.exit_code == 2
    assert assert_one_error_line(result).startswith(f"error: {message}")


def test_yaml_flow_style_is_still_read(service: FakeService) -> None:
    service.on("POST", "/v2/deployments", [httpx.Response(201, json=deployment())])
    text = "{name: a, source: external_docker, source_revision_config: {image_uri: 'a:1'}}"
    result = run("deployments", "create", "-f", "-", stdin=text)
    assert result.exit_code == 0, result.output


def test_one_message_per_field_instead_of_union_branches(service: FakeService) -> None:
    text = "source_config: {resource_spec: {min_scale: two, max_scale: -1}, listener_id: 7}\n"
    result = run("deployments", "update", DEP_ID, "-f", "-", stdin=text)
    assert result.exit_code == 2
    assert assert_one_error_line(result) == (
        "error: stdin: source_config.resource_spec.min_scale: must be an integer; "
        "source_config.resource_spec.max_scale: must be greater than or equal to 0; "
        "source_config.listener_id: must be a UUID"
    )


@pytest.mark.parametrize(
    "number",
    ["1e400", ".inf", '"1e400"'],  # a string read as a number too
)
def test_an_infinite_number_is_a_field_error_not_a_crash(service: FakeService, number: str) -> None:
    text = f"source_config: {{resource_spec: {{orchestrator_cpu: {number}}}}}\n"
    for command in (["deployments", "update", DEP_ID], ["deployments", "create"]):
        result = run(*command, "-f", "-", stdin=f"name: bot\n{text}")
        assert result.exit_code == 2, result.output
        assert assert_one_error_line(result) == (
            "error: stdin: source_config.resource_spec.orchestrator_cpu: must be a finite number"
        )
    assert service.requests == []


def test_a_file_that_is_not_text_is_one_line(service: FakeService, tmp_path: Path) -> None:
    path = tmp_path / "binary.yaml"
    path.write_bytes(b"\x86\xff\x00binary")
    result = run("deployments", "create", "-f", str(path))
    assert result.exit_code == 2
    assert assert_one_error_line(result) == f"error: cannot read {path}: not UTF-8 text"


def test_a_kubernetes_manifest_points_to_kubectl(service: FakeService) -> None:
    manifest = "apiVersion: deployplane.io/v1alpha1\nkind: Listener\nmetadata: {name: a}\n"
    result = run("listeners", "create", "-f", "-", stdin=manifest)
    assert result.exit_code == 2
    line = assert_one_error_line(result)
    assert "is a Kubernetes manifest (kind Listener); use kubectl apply" in line
    assert service.requests == []


@pytest.mark.parametrize("image", ["NOT A VALID IMAGE::!!", "Registry.io/Org/App:1", "a:b:c"])
def test_an_invalid_image_is_refused_before_any_request(service: FakeService, image: str) -> None:
    text = json.dumps({"source_revision_config": {"image_uri": image}})
    result = run("deployments", "update", DEP_ID, "-f", "-", stdin=text)
    assert result.exit_code == 2
    assert "source_revision_config.image_uri: not a valid image" in assert_one_error_line(result)
    assert image not in result.stderr
    assert service.requests == []


@pytest.mark.parametrize(
    "image",
    [
        "img:1",
        "registry.example.com/agent:1",
        "localhost:5000/team/agent:v1.2-rc.1",
        "[::1]:5000/agent",
        f"ghcr.io/acme/agent@sha256:{'a' * 64}",
        f"agent:1.0@sha256:{'0' * 64}",
        "docker.io/library/python:3.12-slim",
    ],
)
def test_image_references_of_the_docker_grammar_are_accepted(image: str) -> None:
    assert image_reference_error(image) is None


@pytest.mark.parametrize(
    ("image", "reason"),
    [
        ("", "must not be empty"),
        ("NOT A VALID IMAGE::!!", "must not contain whitespace"),
        ("acme/Agent:1", "the repository name must be lowercase"),
        ("agent:-x", "the tag must be"),
        ("agent@sha256:abc", "the digest must be"),
        ("a/" + "b" * 260, "at most 255"),
        ("agent:\u00e9", "must be ASCII"),
    ],
)
def test_image_references_outside_the_grammar_say_why(image: str, reason: str) -> None:
    error = image_reference_error(image)
    assert error is not None
    assert reason in error


# ------------------------------------------------------------------ planning


def current(**over: Any) -> Deployment:
    return Deployment.model_validate(deployment(**{**GIT, **over}))


def desired(data: dict[str, Any]) -> planning.DeploymentFile:
    return planning.DeploymentFile.model_validate(data)


def patch_of(now: Deployment, data: dict[str, Any]) -> dict[str, Any] | None:
    patch = planning.deployment_patch(now, desired(data))
    return None if patch is None else patch.model_dump(mode="json", exclude_unset=True)


def test_the_output_of_get_plans_no_patch_with_secrets_and_git_host() -> None:
    now = current()
    assert patch_of(now, as_get_yaml(deployment(**GIT))) is None


def test_a_secret_value_in_the_answer_is_never_printed_or_sent() -> None:
    """The published Secret shape of an answer holds a `value`, which is never the
    value (the emulator's mask `<redacted>`; another service's mask may differ): it is
    dropped on reading, so `get -o yaml` prints names and applying that sends nothing."""
    masked = [{"name": "OPENAI_API_KEY", "value": "<redacted>"}, {"name": "TOKEN", "value": "*"}]
    printed = as_get_yaml(deployment(**{**GIT, "secrets": masked}))
    assert printed["secrets"] == [{"name": "OPENAI_API_KEY"}, {"name": "TOKEN"}]
    assert patch_of(current(secrets=masked), printed) is None


def test_only_what_differs_is_sent() -> None:
    now = current()
    edited = as_get_yaml(deployment(**GIT))
    edited["source_config"]["resource_spec"]["min_scale"] = 2
    edited["source_revision_config"]["repo_ref"] = "release"
    assert patch_of(now, edited) == {
        "source_config": {
            "resource_spec": {**edited["source_config"]["resource_spec"], "min_scale": 2}
        },
        "source_revision_config": {"repo_ref": "release"},
    }


def test_an_equal_image_is_not_sent_as_it_would_make_a_revision() -> None:
    now = Deployment.model_validate(deployment())
    assert patch_of(now, {"source_revision_config": {"image_uri": "img:1"}}) is None
    assert patch_of(now, {"source_revision_config": {"image_uri": "img:2"}}) == {
        "source_revision_config": {"image_uri": "img:2"}
    }


def test_secrets_by_name_keep_them_and_values_replace_them() -> None:
    now = current()
    names_only = {"secrets": [{"name": "TOKEN"}, {"name": "OPENAI_API_KEY"}]}
    assert patch_of(now, names_only) is None
    with_values = {"secrets": [{"name": "TOKEN", "value": "t"}, {"name": "X", "value": "x"}]}
    assert patch_of(now, with_values) == with_values
    with pytest.raises(planning.PlanError, match="give every secret with its value"):
        patch_of(now, {"secrets": [{"name": "TOKEN"}]})
    with pytest.raises(planning.PlanError, match=r"secrets\.0\.value: required"):
        patch_of(now, {"secrets": [{"name": "TOKEN"}, {"name": "X", "value": "x"}]})


def test_name_and_source_cannot_change() -> None:
    with pytest.raises(planning.PlanError, match="name: cannot change"):
        patch_of(current(), {"name": "other"})
    with pytest.raises(planning.PlanError, match="source: cannot change"):
        patch_of(current(), {"source": "external_docker"})


BOT = {"agent_id": "bot", "environment": "staging"}


def test_an_agents_file_creates_by_agent_and_sends_no_name() -> None:
    """`get -o yaml` of an agent's deployment shows the name the control plane gave:
    read-only, not sent (the service refuses a name beside an agent)."""
    body = {**as_get_yaml(deployment(name="bot-staging", agent=BOT)), "secrets": []}
    created = planning.deployment_create(desired(body))
    assert created.name is None
    assert created.agent is not None
    assert created.agent.model_dump(mode="json") == BOT
    assert "name" not in created.model_dump(mode="json", exclude_unset=True)


def test_the_flags_give_a_file_its_agent_unless_it_names_another_or_a_name() -> None:
    agent = DeploymentAgent.model_validate(BOT)
    made = planning.for_agent(desired({"source": "external_docker"}), agent)
    assert made.agent == agent
    assert planning.for_agent(desired({"agent": BOT, "name": "bot-staging"}), agent).agent == agent
    with pytest.raises(planning.PlanError, match="names another agent or environment"):
        planning.for_agent(desired({"agent": {**BOT, "environment": "production"}}), agent)
    with pytest.raises(planning.PlanError, match="name: not with --agent-id"):
        planning.for_agent(desired({"name": "mine"}), agent)


def test_the_agent_cannot_change_by_an_update() -> None:
    keyed = Deployment.model_validate(deployment(name="bot-staging", agent=BOT))
    assert patch_of(keyed, {"agent": BOT, "name": "bot-staging"}) is None
    with pytest.raises(planning.PlanError, match=r"agent: cannot change .*'bot' in staging"):
        patch_of(keyed, {"agent": {**BOT, "environment": "production"}})
    with pytest.raises(planning.PlanError, match="created by name"):
        patch_of(current(), {"agent": BOT})


def test_create_ignores_a_git_host_custom_url_and_needs_secret_values() -> None:
    body = as_get_yaml(deployment(**GIT))
    with pytest.raises(planning.PlanError, match=r"secrets\.0\.value: required to create"):
        planning.deployment_create(desired(body))
    body["secrets"] = [{"name": "A", "value": "v"}]
    created = planning.deployment_create(desired(body))
    assert created.source_config is not None
    assert "custom_url" not in created.source_config.model_fields_set
    assert "repo_commit_sha" not in created.model_dump(mode="json")["source_revision_config"]


def test_listener_plans() -> None:
    now = Listener.model_validate(cli_service.listener())
    same = Listener.model_validate(cli_service.listener()).model_dump(mode="json")
    assert planning.listener_patch(now, planning.ListenerFile.model_validate(same)) is None
    changed = planning.ListenerFile.model_validate({**same, "version": "v2"})
    patch = planning.listener_patch(now, changed)
    assert patch is not None
    assert patch.model_dump(exclude_unset=True) == {"version": "v2"}
    with pytest.raises(planning.PlanError, match="compute_id: cannot change"):
        planning.listener_patch(now, planning.ListenerFile(compute_id="other"))


def test_a_listener_file_without_compute_config_creates_with_an_empty_one() -> None:
    """The published create requires compute_config: `{}` when the file has none."""
    for extra in ({}, {"compute_config": None}):
        file = planning.ListenerFile.model_validate({"compute_type": "k8s", "compute_id": "c"})
        file = file.model_copy(update=extra)
        body = planning.listener_create(file).model_dump(mode="json", exclude_unset=True)
        assert body == {"compute_type": "k8s", "compute_id": "c", "compute_config": {}}
    given = {"compute_type": "k8s", "compute_id": "c", "compute_config": {"k8s_namespaces": ["a"]}}
    created = planning.listener_create(planning.ListenerFile.model_validate(given))
    assert created.model_dump(mode="json", exclude_unset=True) == given
