"""The PATCH decision of the emulator (`emulator.rules.patchdecision.decide_patch`), without a
database: what a PATCH changes, whether it makes a new revision, what it refuses."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from deployplane.api.models import (
    DeploymentAgent,
    DeploymentPatch,
    DeploymentStatus,
    RevisionStatus,
    Secret,
    Source,
)
from deployplane.api.models import SourceRevisionConfig as RevisionConfig
from deployplane.emulator.errors import InvalidError, RefusedError
from deployplane.emulator.rules import secretdigest
from deployplane.emulator.rules.patchdecision import PatchDecision, StoredDeployment, decide_patch
from deployplane.emulator.settings import WorkspaceConfig

KEY = b"k" * 32
INTEGRATION = uuid.uuid4()
LISTENER = uuid.uuid4()
WORKSPACE = WorkspaceConfig.model_validate(
    {
        "id": str(uuid.uuid4()),
        "name": "w",
        "integrations": [{"id": str(INTEGRATION)}],
    }
)
DEPLOYMENT_ID = uuid.uuid4()
SECRETS = [Secret(name="TOKEN", value="s3cret")]


def docker(**changes: Any) -> StoredDeployment:
    fields: dict[str, Any] = {
        "id": DEPLOYMENT_ID,
        "name": "app",
        "source": Source.EXTERNAL_DOCKER,
        "status": DeploymentStatus.READY.value,
        "source_config": {"listener_id": str(LISTENER), "resource_spec": {"min_scale": 1}},
        "secrets": secretdigest.records(KEY, DEPLOYMENT_ID, SECRETS),
        "secret_references": None,
        "revision_config": RevisionConfig(image_uri="registry.example/app:1"),
        "revision_status": RevisionStatus.DEPLOYED,
    }
    return StoredDeployment(**{**fields, **changes})


def git(**changes: Any) -> StoredDeployment:
    return docker(
        source=Source.GIT_HOST,
        source_config={
            "integration_id": str(INTEGRATION),
            "repo_url": "https://git.example/a/b",
            "custom_url": "https://x.deployments.deployplane.example",
        },
        revision_config=RevisionConfig(repo_ref="main", graph_config_path="graph.json"),
        **changes,
    )


def decide(current: StoredDeployment, body: dict[str, Any]) -> PatchDecision:
    patch = DeploymentPatch.model_validate(body)
    return decide_patch(current, patch, workspace=WORKSPACE, secret_key=KEY)


def locs(errors: list[dict[str, Any]]) -> list[list[Any]]:
    return [error["loc"] for error in errors]


def test_an_empty_patch_changes_nothing_and_makes_no_revision() -> None:
    decision = decide(docker(), {})
    assert decision.errors == []
    assert not decision.new_revision
    assert decision.values == {
        "source_config": docker().source_config,
        "secrets": docker().secrets,
    }
    assert decision.revision_config == docker().revision_config
    assert decision.listener_to_check is None
    assert not decision.check_repository


def test_source_config_keys_replace_clear_and_keep_without_a_revision() -> None:
    decision = decide(
        docker(), {"source_config": {"resource_spec": {"max_scale": 3}, "listener_id": None}}
    )
    assert decision.values["source_config"] == {"resource_spec": {"max_scale": 3}}
    assert not decision.new_revision
    assert decision.listener_to_check is None  # cleared: nothing to look up


def test_the_stored_source_config_is_not_mutated() -> None:
    current = docker()
    before = dict(current.source_config)
    decide(current, {"source_config": {"listener_id": None}})
    assert current.source_config == before


@pytest.mark.parametrize(
    ("body", "want"),
    [
        ({"source_revision_config": {"image_uri": "registry.example/app:2"}}, True),
        ({"source_revision_config": {"image_uri": None}}, False),  # nulls are ignored
        ({"secrets": [{"name": "TOKEN", "value": "s3cret"}]}, False),  # the same value
        ({"secrets": [{"name": "TOKEN", "value": "other"}]}, True),
        ({"secrets": []}, True),
        ({"secret_references": [{"name": "A", "secret_name": "s", "secret_key": "k"}]}, True),
        ({"source_config": {"resource_spec": {"min_scale": 2}}}, False),
    ],
)
def test_what_makes_a_new_revision(body: dict[str, Any], want: bool) -> None:
    decision = decide(docker(), body)
    assert decision.errors == []
    assert decision.new_revision is want


def test_a_new_image_is_the_new_revisions_config() -> None:
    decision = decide(docker(), {"source_revision_config": {"image_uri": "registry.example/b:2"}})
    assert decision.revision_config == RevisionConfig(image_uri="registry.example/b:2")


def test_unchanged_secret_references_are_not_written() -> None:
    stored = [{"name": "A", "secret_name": "s", "secret_key": "k"}]
    decision = decide(docker(secret_references=stored), {"secret_references": stored})
    assert "secret_references" not in decision.values
    assert not decision.new_revision


def test_secrets_are_stored_as_keyed_digests_never_values() -> None:
    decision = decide(docker(), {"secrets": [{"name": "NEW", "value": "v4lue"}]})
    [record] = decision.values["secrets"]
    assert record["name"] == "NEW"
    assert record["digest"].startswith(secretdigest.PREFIX)
    assert "v4lue" not in repr(decision)


@pytest.mark.parametrize(
    ("body", "field"),
    [({"name": "renamed"}, "name"), ({"source": "git_host"}, "source")],
)
def test_name_and_source_cannot_change(body: dict[str, Any], field: str) -> None:
    with pytest.raises(InvalidError) as raised:
        decide(docker(), body)
    assert locs(raised.value.errors) == [["body", field]]


def test_sending_the_same_name_and_source_is_harmless() -> None:
    assert decide(docker(), {"name": "app", "source": "external_docker"}).errors == []


BOT = {"agent_id": "bot", "environment": "staging"}


@pytest.mark.parametrize(
    ("stored", "sent"),
    [
        (None, BOT),  # created by name
        (BOT, {**BOT, "environment": "production"}),
        (BOT, {**BOT, "agent_id": "other"}),
    ],
)
def test_the_agent_cannot_change(stored: dict[str, str] | None, sent: dict[str, str]) -> None:
    current = docker(agent=None if stored is None else DeploymentAgent.model_validate(stored))
    with pytest.raises(InvalidError) as raised:
        decide(current, {"agent": sent})
    assert locs(raised.value.errors) == [["body", "agent"]]


def test_sending_the_same_agent_is_harmless() -> None:
    assert decide(docker(agent=DeploymentAgent.model_validate(BOT)), {"agent": BOT}).errors == []


def test_a_deployment_being_deleted_is_refused_after_the_immutable_fields() -> None:
    deleting = docker(status=DeploymentStatus.AWAITING_DELETE.value)
    with pytest.raises(RefusedError, match=f"Deployment ID {DEPLOYMENT_ID} is being deleted"):
        decide(deleting, {})
    with pytest.raises(InvalidError):  # a name change is answered 422 first
        decide(deleting, {"name": "renamed"})


def test_errors_are_collected_in_order() -> None:
    decision = decide(
        docker(),
        {
            "secrets": [{"name": "A", "value": "1"}, {"name": "A", "value": "2"}],
            "source_revision_config": {"repo_ref": "main"},
            "secret_references": [{"name": "B", "secret_name": "s", "secret_key": "k"}],
        },
    )
    assert locs(decision.errors) == [
        ["body", "secrets", 1, "name"],
        ["body", "source_revision_config", "repo_ref"],
    ]


def test_deployment_type_cannot_change_on_git_host() -> None:
    decision = decide(git(), {"source_config": {"deployment_type": "prod"}})
    assert locs(decision.errors) == [["body", "source_config", "deployment_type"]]


def test_secret_references_are_external_docker_only() -> None:
    body = {"secret_references": [{"name": "A", "secret_name": "s", "secret_key": "k"}]}
    assert locs(decide(git(), body).errors) == [["body", "secret_references"]]


def test_a_named_listener_is_to_be_looked_up_even_when_unchanged() -> None:
    decision = decide(docker(), {"source_config": {"listener_id": str(LISTENER)}})
    assert decision.listener_to_check == LISTENER


@pytest.mark.parametrize(
    ("source_config", "want"),
    [
        ({"repo_url": "https://git.example/a/b"}, True),
        ({"integration_id": str(INTEGRATION)}, True),
        ({"build_on_push": False}, False),
    ],
)
def test_the_repository_is_checked_when_a_git_patch_names_it(
    source_config: dict[str, Any], want: bool
) -> None:
    decision = decide(git(), {"source_config": source_config})
    assert decision.errors == []
    assert decision.check_repository is want


def test_a_git_ref_change_makes_a_revision_with_the_merged_config() -> None:
    decision = decide(git(), {"source_revision_config": {"repo_ref": "release"}})
    assert decision.new_revision
    assert decision.revision_config == RevisionConfig(
        repo_ref="release", graph_config_path="graph.json"
    )


# ------------------------------------------- the vendor CLI's internal_* revisions

BUILT = RevisionConfig(
    image_uri="images.deployplane.example/app@sha256:" + "a" * 64,
    source_tarball_path="sources/x/1.tar.gz",
    langgraph_config_path="langgraph.json",
)


def built(**changes: Any) -> StoredDeployment:
    return docker(
        source=Source.INTERNAL_SOURCE,
        source_config={"deployment_type": "dev_zero"},
        revision_config=BUILT,
        revision_source=Source.INTERNAL_SOURCE,
        **changes,
    )


def test_a_pushed_image_after_a_build_replaces_the_whole_revision_config() -> None:
    image = "registry.deployplane.example/w/app@sha256:" + "b" * 64
    decision = decide(
        built(),
        {"revision_source": "internal_docker", "source_revision_config": {"image_uri": image}},
    )
    assert decision.errors == []
    assert decision.new_revision
    assert decision.revision_source is Source.INTERNAL_DOCKER
    # nothing of the build carried over: an image revision, not half of each
    assert decision.revision_config == RevisionConfig(image_uri=image)
    assert decision.upload_to_check is None


def test_a_new_upload_is_built_and_must_be_checked() -> None:
    decision = decide(
        built(),
        {
            "revision_source": "internal_source",
            "source_revision_config": {
                "source_tarball_path": "sources/x/2.tar.gz",
                "langgraph_config_path": "sub/langgraph.json",
            },
        },
    )
    assert decision.errors == []
    assert decision.upload_to_check == "sources/x/2.tar.gz"
    assert decision.revision_config.image_uri is None  # the build will set it


@pytest.mark.parametrize("revision_source", ["git_host", "external_docker"])
def test_an_internal_deployment_takes_only_internal_revision_sources(revision_source: str) -> None:
    decision = decide(built(), {"revision_source": revision_source})
    assert [e["loc"] for e in decision.errors] == [["body", "revision_source"]]


def test_an_image_deployment_takes_no_revision_source_but_its_own() -> None:
    refused = decide(docker(), {"revision_source": "internal_source"})
    assert [e["loc"] for e in refused.errors] == [["body", "revision_source"]]
    own = decide(docker(), {"revision_source": "external_docker"})
    assert own.errors == []


@pytest.mark.parametrize(
    ("body", "rerender"),
    [
        ({"source_config": {"resource_spec": {"min_scale": 1, "max_scale": 4}}}, True),
        ({"source_config": {"resource_spec": {"min_scale": 1, "cpu": None}}}, False),
        ({"source_config": {"resource_spec": None}}, True),
        ({"source_config": {"listener_config": {"k8s_namespace": "agents"}}}, True),
        ({"source_config": {"listener_id": str(LISTENER)}}, False),
        ({"source_config": {"custom_url": "https://agent.example"}}, False),
        ({"secrets": [{"name": "TOKEN", "value": "s3cret"}]}, False),
        # a new revision carries the change: no re-render of the old one
        (
            {
                "source_config": {"resource_spec": {"max_scale": 9}},
                "source_revision_config": {"image_uri": "registry.example/app:2"},
            },
            False,
        ),
    ],
)
def test_a_change_of_what_the_data_plane_renders_asks_for_a_rerender(
    body: dict[str, Any], rerender: bool
) -> None:
    """Only a change of resource_spec, listener_config or listener_id without a new
    revision (the spec's rule) marks the running revision for a re-render; equal values
    (an explicit null where nothing was set) ask nothing."""
    assert decide(docker(), body).rerender is rerender


RESOURCES = {"source_config": {"resource_spec": {"min_scale": 1, "max_scale": 4}}}
IN_FLIGHT = [
    RevisionStatus.CREATING,
    RevisionStatus.QUEUED,
    RevisionStatus.AWAITING_BUILD,
    RevisionStatus.BUILDING,
    RevisionStatus.AWAITING_DEPLOY,
    RevisionStatus.DEPLOYING,
]
ENDED_UNDEPLOYED = [
    RevisionStatus.CREATE_FAILED,
    RevisionStatus.BUILD_FAILED,
    RevisionStatus.DEPLOY_FAILED,
    RevisionStatus.SKIPPED,
    RevisionStatus.INTERRUPTED,
]


def test_a_rendered_change_of_a_deployed_revision_is_rendered_again_without_a_revision() -> None:
    decision = decide(docker(revision_status=RevisionStatus.DEPLOYED), RESOURCES)
    assert (decision.new_revision, decision.retry, decision.rerender) == (False, False, True)


@pytest.mark.parametrize("status", IN_FLIGHT)
def test_a_rendered_change_of_a_revision_on_its_way_is_deployed_with_it(
    status: RevisionStatus,
) -> None:
    """Nothing to mark and no revision: the agent renders the deployment as it is when
    the revision deploys (and renders again one it has applied already)."""
    decision = decide(docker(revision_status=status), RESOURCES)
    assert (decision.new_revision, decision.retry, decision.rerender) == (False, False, False)
    assert decision.values["source_config"]["resource_spec"] == {"min_scale": 1, "max_scale": 4}


@pytest.mark.parametrize("status", ENDED_UNDEPLOYED)
@pytest.mark.parametrize("stored", [docker, git], ids=["external_docker", "git_host"])
def test_a_rendered_change_after_a_revision_ended_undeployed_retries_it(
    status: RevisionStatus, stored: Any
) -> None:
    """Nothing of that revision runs, so a re-render could change nothing: the fix
    reaches what runs as a new revision with the same source revision config."""
    current = stored(revision_status=status)
    decision = decide(current, RESOURCES)
    assert (decision.new_revision, decision.retry, decision.rerender) == (True, True, False)
    assert decision.revision_config == current.revision_config
    assert decision.revision_source is current.source


@pytest.mark.parametrize("status", [*ENDED_UNDEPLOYED, *IN_FLIGHT, RevisionStatus.DEPLOYED])
@pytest.mark.parametrize(
    "body",
    [
        {"source_config": {"custom_url": "https://agent.example"}},
        {"source_config": {"resource_spec": {"min_scale": 1}}},  # as stored
        {"secrets": [{"name": "TOKEN", "value": "s3cret"}]},
    ],
    ids=["not-rendered", "same-values", "same-secrets"],
)
def test_a_patch_that_changes_nothing_rendered_retries_nothing(
    status: RevisionStatus, body: dict[str, Any]
) -> None:
    decision = decide(docker(revision_status=status), body)
    assert (decision.new_revision, decision.retry, decision.rerender) == (False, False, False)


def test_a_change_with_its_own_revision_is_no_retry() -> None:
    body = {**RESOURCES, "source_revision_config": {"image_uri": "registry.example/app:2"}}
    decision = decide(docker(revision_status=RevisionStatus.DEPLOY_FAILED), body)
    assert (decision.new_revision, decision.retry) == (True, False)
    assert decision.revision_config.image_uri == "registry.example/app:2"


def test_no_revision_yet_is_no_retry() -> None:
    decision = decide(built(revision_status=None), RESOURCES)
    assert (decision.new_revision, decision.retry, decision.rerender) == (False, False, False)
