"""Pure logic of the emulator: pipeline steps, failure rules, per-source validation,
config parsing."""

from __future__ import annotations

import uuid

import pytest

from deployplane.api.models import RevisionStatus as S
from deployplane.api.models import Source, SourceConfig, SourceRevisionConfig
from deployplane.emulator.revisions.pipeline import next_status, path_of
from deployplane.emulator.rules.rollout import image_version
from deployplane.emulator.rules.validation import (
    deployment_errors,
    ref_format_error,
    repo_url_error,
)
from deployplane.emulator.settings import (
    ConfigError,
    PipelineConfig,
    WorkspaceConfig,
    dev_config,
    parse_config,
)

INTEGRATION = uuid.uuid4()
WORKSPACE = WorkspaceConfig.model_validate(
    {"id": str(uuid.uuid4()), "name": "w", "integrations": [{"id": str(INTEGRATION)}]}
)


def walk(source: Source, failure: S | None) -> list[S]:
    status, seen = S.CREATING, [S.CREATING]
    while not status.is_terminal:
        status = next_status(source, status, failure)
        seen.append(status)
    return seen


@pytest.mark.parametrize(
    ("source", "failure", "want"),
    [
        (Source.GIT_HOST, None, list(path_of(Source.GIT_HOST))),
        (Source.EXTERNAL_DOCKER, None, list(path_of(Source.EXTERNAL_DOCKER))),
        (Source.GIT_HOST, S.CREATE_FAILED, [S.CREATING, S.CREATE_FAILED]),
        (
            Source.GIT_HOST,
            S.BUILD_FAILED,
            [S.CREATING, S.QUEUED, S.AWAITING_BUILD, S.BUILDING, S.BUILD_FAILED],
        ),
        (Source.EXTERNAL_DOCKER, S.BUILD_FAILED, [S.CREATING, S.QUEUED, S.BUILD_FAILED]),
        (
            Source.EXTERNAL_DOCKER,
            S.DEPLOY_FAILED,
            [S.CREATING, S.QUEUED, S.AWAITING_DEPLOY, S.DEPLOYING, S.DEPLOY_FAILED],
        ),
    ],
)
def test_pipeline_paths(source: Source, failure: S | None, want: list[S]) -> None:
    assert walk(source, failure) == want


def test_image_paths_skip_build_states() -> None:
    assert S.BUILDING not in path_of(Source.EXTERNAL_DOCKER)
    assert S.BUILDING in path_of(Source.GIT_HOST)


def test_terminal_states_do_not_move() -> None:
    for status in (S.DEPLOYED, S.SKIPPED, S.INTERRUPTED, S.DEPLOY_FAILED):
        assert next_status(Source.GIT_HOST, status, None) is status


def test_image_version() -> None:
    assert image_version(Source.EXTERNAL_DOCKER, "r/app:1", None) == "r/app:1"
    assert image_version(Source.GIT_HOST, None, "abcdef0123456789") == "abcdef0"


def test_failure_rules_match_all_given_regexes() -> None:
    config = PipelineConfig.model_validate(
        {
            "failures": [
                {"image_uri_regex": ":broken$", "name_regex": "^a", "status": "DEPLOY_FAILED"},
                {"repo_ref_regex": "^bad$", "status": "BUILD_FAILED"},
            ]
        }
    )
    assert config.failure_for(name="app", image_uri="x:broken", repo_ref=None) is S.DEPLOY_FAILED
    assert config.failure_for(name="bpp", image_uri="x:broken", repo_ref=None) is None
    assert config.failure_for(name="g", image_uri=None, repo_ref="bad") is S.BUILD_FAILED
    assert config.failure_for(name="g", image_uri=None, repo_ref="main") is None


def test_a_failure_rule_may_fail_only_a_deployments_first_revisions() -> None:
    config = PipelineConfig.model_validate(
        {"failures": [{"name_regex": "^flaky", "first_revisions": 2, "status": "BUILD_FAILED"}]}
    )
    outcomes = [
        config.failure_for(name="flaky", image_uri=None, repo_ref=None, seq=n) for n in (1, 2, 3)
    ]
    assert outcomes == [S.BUILD_FAILED, S.BUILD_FAILED, None]


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"pipeline": {"step_second": 1}}, "pipeline.step_second: unknown key"),
        ({"workspaces": [{"id": "x", "name": "n"}]}, "workspaces.0.id"),
        ({"workspaces": [{"id": str(uuid.uuid4()), "name": "n", "mode": "x"}]}, "mode"),
        ({"pipeline": {"failures": [{"status": "DEPLOYED"}]}}, "failures.0.status"),
        (
            {"pipeline": {"failures": [{"first_revisions": 0, "status": "BUILD_FAILED"}]}},
            "failures.0.first_revisions",
        ),
        ({"pipeline": {"failures": [{"name_regex": "(", "status": "DEPLOY_FAILED"}]}}, "regex"),
        ({"faults": {"error_rate": 2}}, "faults.error_rate"),
        ({"surprise": True}, "surprise: unknown key"),
    ],
)
def test_config_errors_name_the_key(data: object, message: str) -> None:
    with pytest.raises(ConfigError, match=message.replace("(", r"\(")):
        parse_config(data)


def test_config_keys_never_show_in_reprs() -> None:
    config, key = dev_config()
    assert key not in repr(config)
    assert key not in str(config.workspaces[0])


def test_dev_config_uses_a_given_key() -> None:
    config, key = dev_config(api_key="fixed")
    assert key == "fixed"
    assert config.workspaces[0].api_keys == ["fixed"]


def errors_at(
    source: Source, config: SourceConfig, revision: SourceRevisionConfig
) -> set[tuple[str | int, ...]]:
    found = deployment_errors(
        source=source, source_config=config, revision_config=revision, workspace=WORKSPACE
    )
    return {tuple(error["loc"]) for error in found}


def test_valid_git_deployment_has_no_errors() -> None:
    config = SourceConfig(integration_id=INTEGRATION, repo_url="u", build_on_push=True)
    revision = SourceRevisionConfig(repo_ref="main", graph_config_path="g.json")
    assert errors_at(Source.GIT_HOST, config, revision) == set()


def test_tag_with_build_on_push_is_refused() -> None:
    config = SourceConfig(integration_id=INTEGRATION, repo_url="u", build_on_push=True)
    revision = SourceRevisionConfig(repo_ref="refs/tags/v1", graph_config_path="g.json")
    assert errors_at(Source.GIT_HOST, config, revision) == {
        ("body", "source_config", "build_on_push")
    }


def test_mode_restricts_source() -> None:
    saas = WORKSPACE.model_copy(update={"mode": "saas"})
    found = deployment_errors(
        source=Source.EXTERNAL_DOCKER,
        source_config=SourceConfig(),
        revision_config=SourceRevisionConfig(image_uri="i"),
        workspace=saas,
    )
    assert [tuple(error["loc"]) for error in found] == [("body", "source")]


# git check-ref-format (with --allow-onelevel): valid and invalid names
VALID_REFS = [
    "main",
    "feature/x",
    "refs/heads/main",
    "refs/tags/v1.0.0",
    "release-1.2",
    "a.b/c_d",
    "caf\u00e9",
]
INVALID_REFS = [
    "refs//tags/v1",
    " refs/tags/v1",
    "refs/heads/../tags/v1",
    "refs/tags/v1/",
    "/main",
    "main.",
    "main.lock",
    "refs/.hidden/x",
    "a@{b",
    "@",
    "-main",
    "a b",
    "a~1",
    "a^",
    "a:b",
    "a?",
    "a*",
    "a[b",
    "a\\b",
    "a\x7fb",
    "a\tb",
    "refs/tags/",
]


@pytest.mark.parametrize("ref", VALID_REFS)
def test_valid_git_refs(ref: str) -> None:
    assert ref_format_error(ref) is None


@pytest.mark.parametrize("ref", INVALID_REFS)
def test_invalid_git_refs_are_refused_without_echoing_them(ref: str) -> None:
    reason = ref_format_error(ref)
    assert reason is not None
    assert ref.strip() not in reason or len(ref.strip()) < 2


@pytest.mark.parametrize("ref", ["refs//tags/v1", " refs/tags/v1", "refs/heads/../tags/v1"])
def test_invalid_ref_is_a_repo_ref_error(ref: str) -> None:
    config = SourceConfig(integration_id=INTEGRATION, repo_url="u", build_on_push=True)
    revision = SourceRevisionConfig(repo_ref=ref, graph_config_path="g.json")
    assert ("body", "source_revision_config", "repo_ref") in errors_at(
        Source.GIT_HOST, config, revision
    )


def test_repo_url_must_be_listed_by_its_integration() -> None:
    workspace = WorkspaceConfig.model_validate(
        {
            "id": str(uuid.uuid4()),
            "name": "w",
            "integrations": [
                {
                    "id": str(INTEGRATION),
                    "repositories": [
                        {
                            "id": 1,
                            "name": "a",
                            "owner": "o",
                            "url": "https://g/o/a",
                            "default_branch": "main",
                        }
                    ],
                }
            ],
        }
    )
    listed = SourceConfig(integration_id=INTEGRATION, repo_url="https://g/o/a")
    assert repo_url_error(listed, workspace) is None
    unlisted = SourceConfig(integration_id=INTEGRATION, repo_url="https://g/o/b")
    reason = repo_url_error(unlisted, workspace)
    assert reason is not None
    assert "repo_url" in reason
    assert str(INTEGRATION) in reason
    assert "https://g/o/b" not in reason


_PROVIDER = {
    "id": "p",
    "organization_id": "o",
    "provider_id": "sso",
    "name": "SSO",
    "client_id": "c",
    "auth_url": "https://sso.example.com/auth",
    "token_url": "https://sso.example.com/token",
    "uses_pkce": True,
}


def test_oauth_provider_settings_take_snake_case_keys_only() -> None:
    """The setting shares its fields with the API model, not the API's camelCase."""
    workspace = {"id": str(uuid.uuid4()), "name": "w"}
    config = parse_config({"workspaces": [{**workspace, "oauth_providers": [_PROVIDER]}]})
    provider = config.workspaces[0].oauth_providers[0]
    assert provider.client_id == "c"
    assert provider.code_challenge_method is None
    assert provider.created_at is None
    camel = {**{k: v for k, v in _PROVIDER.items() if k != "client_id"}, "clientId": "c"}
    with pytest.raises(ConfigError, match="clientId: unknown key"):
        parse_config({"workspaces": [{**workspace, "oauth_providers": [camel]}]})
