"""Deployments API of the emulator: success and error paths, in-process."""
# ruff: noqa: F811  (pytest fixtures imported from the harness are parameters here)

from __future__ import annotations

import asyncio
import uuid

import httpx
import pytest
from tests.support.emulator_app import (  # noqa: F401  (fixtures are used by name)
    INTEGRATION_A,
    KEY_SAAS,
    REPO_URL,
    api,
    emulator,
    git_body,
    image_body,
)

from deployplane.api.models import NAME_MAX_LENGTH
from deployplane.emulator.store.answers import SECRET_VALUE_MASK

SECRET_VALUE = "sk-very-secret-value"

# Also on PostgreSQL (conftest.py): these are the behaviours a database can change.
pytestmark = pytest.mark.postgres


async def test_create_image_deployment_answers_201_with_first_revision(
    api: httpx.AsyncClient,
) -> None:
    response = await api.post("/v2/deployments", json=image_body())
    assert response.status_code == 201
    body = response.json()
    uuid.UUID(body["id"])
    assert body["name"] == "img-app"
    assert body["source"] == "external_docker"
    assert body["status"] == "AWAITING_DATABASE"
    assert body["active_revision_id"] is None
    assert body["image_version"] is None
    # the published Secret shape: the name, and the fixed mask for the value
    assert body["secrets"] == [{"name": "OPENAI_API_KEY", "value": SECRET_VALUE_MASK}]
    assert body["source_revision_config"]["image_uri"] == "registry.example.com/app:1"
    assert body["source_revision_config"]["repo_commit_sha"] is None
    assert body["source_config"]["resource_spec"]["min_scale"] == 1
    assert body["created_at"].endswith("Z")
    revision = await api.get(f"/v2/deployments/{body['id']}/revisions/{body['latest_revision_id']}")
    assert revision.status_code == 200
    assert revision.json()["status"] == "CREATING"
    assert revision.json()["source"] == "external_docker"


async def test_create_git_deployment_gets_a_commit_sha(api: httpx.AsyncClient) -> None:
    response = await api.post("/v2/deployments", json=git_body())
    assert response.status_code == 201
    config = response.json()["source_revision_config"]
    assert config["repo_ref"] == "main"
    assert config["graph_config_path"] == "langgraph.json"
    sha = config["repo_commit_sha"]
    assert len(sha) == 40
    int(sha, 16)
    assert response.json()["source_config"]["integration_id"] == str(INTEGRATION_A)


async def test_secret_values_never_appear_in_any_answer(api: httpx.AsyncClient) -> None:
    created = await api.post("/v2/deployments", json=image_body())
    deployment_id = created.json()["id"]
    answers = [
        created,
        await api.get(f"/v2/deployments/{deployment_id}"),
        await api.get("/v2/deployments"),
        await api.get(f"/v2/deployments/{deployment_id}/revisions"),
        await api.patch(
            f"/v2/deployments/{deployment_id}",
            json={"secrets": [{"name": "OTHER", "value": SECRET_VALUE + "2"}]},
        ),
        # wrong types around a secret: the 422 must not echo the input
        await api.post(
            "/v2/deployments",
            json={**image_body("x"), "secrets": [{"name": 5, "value": SECRET_VALUE}]},
        ),
        await api.post(
            "/v2/deployments", json={**image_body("y"), "secrets": [{"value": SECRET_VALUE}]}
        ),
    ]
    for answer in answers:
        assert SECRET_VALUE not in answer.text
    assert answers[-1].status_code == 422
    # the published Secret shape requires a value: every answer holds the mask there
    created_, got, listed, _, patched = (answer.json() for answer in answers[:5])
    for deployment in (created_, got, *listed["resources"], patched):
        assert {s["value"] for s in deployment["secrets"]} == {SECRET_VALUE_MASK}


async def test_missing_name_and_source_are_422_with_loc(api: httpx.AsyncClient) -> None:
    response = await api.post("/v2/deployments", json={})
    assert response.status_code == 422
    locs = {tuple(entry["loc"]) for entry in response.json()["detail"]}
    assert ("body", "name") in locs
    assert ("body", "source") in locs
    for entry in response.json()["detail"]:
        assert set(entry) == {"loc", "msg", "type"}


async def test_git_host_requires_its_fields_and_refuses_image_uri(api: httpx.AsyncClient) -> None:
    response = await api.post(
        "/v2/deployments",
        json={"name": "g", "source": "git_host", "source_revision_config": {"image_uri": "a:b"}},
    )
    assert response.status_code == 422
    locs = {tuple(entry["loc"]) for entry in response.json()["detail"]}
    assert locs == {
        ("body", "source_config", "integration_id"),
        ("body", "source_config", "repo_url"),
        ("body", "source_revision_config", "repo_ref"),
        ("body", "source_revision_config", "graph_config_path"),
        ("body", "source_revision_config", "image_uri"),
    }


async def test_external_docker_requires_image_and_refuses_git_fields(
    api: httpx.AsyncClient,
) -> None:
    response = await api.post(
        "/v2/deployments",
        json={
            "name": "d",
            "source": "external_docker",
            "source_config": {"repo_url": REPO_URL},
            "source_revision_config": {"repo_ref": "main"},
        },
    )
    assert response.status_code == 422
    locs = {tuple(entry["loc"]) for entry in response.json()["detail"]}
    assert locs == {
        ("body", "source_revision_config", "image_uri"),
        ("body", "source_config", "repo_url"),
        ("body", "source_revision_config", "repo_ref"),
    }


async def test_build_on_push_with_a_tag_is_refused(api: httpx.AsyncClient) -> None:
    body = git_body(repo_ref="refs/tags/v1.0")
    body["source_config"]["build_on_push"] = True
    response = await api.post("/v2/deployments", json=body)
    assert response.status_code == 422
    assert response.json()["detail"][0]["loc"] == ["body", "source_config", "build_on_push"]
    body["source_config"]["build_on_push"] = False
    assert (await api.post("/v2/deployments", json=body)).status_code == 201


async def test_unknown_integration_and_listener_are_refused(api: httpx.AsyncClient) -> None:
    body = git_body()
    body["source_config"]["integration_id"] = str(uuid.uuid4())
    body["source_config"]["listener_id"] = str(uuid.uuid4())
    response = await api.post("/v2/deployments", json=body)
    assert response.status_code == 422
    locs = {tuple(entry["loc"]) for entry in response.json()["detail"]}
    assert ("body", "source_config", "integration_id") in locs
    assert ("body", "source_config", "listener_id") in locs


async def test_malformed_uuid_and_wrong_types_are_422(api: httpx.AsyncClient) -> None:
    body = git_body()
    body["source_config"]["integration_id"] = "not-a-uuid"
    response = await api.post("/v2/deployments", json=body)
    assert response.status_code == 422
    assert response.json()["detail"][0]["loc"] == ["body", "source_config", "integration_id"]
    assert (await api.get("/v2/deployments/not-a-uuid")).status_code == 422
    bad_scale = image_body()
    bad_scale["source_config"]["resource_spec"]["min_scale"] = "many"
    assert (await api.post("/v2/deployments", json=bad_scale)).status_code == 422
    assert (await api.post("/v2/deployments", content=b"{not json")).status_code == 422


@pytest.mark.parametrize(
    ("field", "value", "accepted"),
    [
        ("max_scale", 1.5, False),
        ("queue_min_scale", 0.5, False),
        ("memory_mb", 512.25, False),
        ("db_storage_gi", 1.5, False),
        ("max_scale", 2.0, True),  # a whole number, written with a point
        ("cpu", 1.5, True),  # a number, as published
    ],
)
async def test_published_integers_must_be_whole(
    api: httpx.AsyncClient, field: str, value: float, accepted: bool
) -> None:
    """The published ResourceSpec types replica counts and sizes `integer`: a fraction is
    422 naming the field, at the PATCH as at the create (never a rollout that fails)."""
    body = image_body()
    body["source_config"]["resource_spec"] = {field: value}
    created = await api.post("/v2/deployments", json=body)
    patch = {"source_config": {"resource_spec": {field: value}}}
    valid = (await api.post("/v2/deployments", json=image_body("whole"))).json()
    patched = await api.patch(f"/v2/deployments/{valid['id']}", json=patch)
    if accepted:
        assert (created.status_code, patched.status_code) == (201, 200), created.text
        return
    for response in (created, patched):
        assert response.status_code == 422, response.text
        loc = response.json()["detail"][0]["loc"]
        assert loc == ["body", "source_config", "resource_spec", field]


async def test_unknown_request_fields_are_ignored(api: httpx.AsyncClient) -> None:
    body = {**image_body(), "future_field": {"x": 1}}
    body["source_config"]["shiny_new_knob"] = True
    response = await api.post("/v2/deployments", json=body)
    assert response.status_code == 201
    assert "future_field" not in response.json()
    assert "shiny_new_knob" not in response.json()["source_config"]


async def test_workspace_mode_restricts_source(emulator: tuple[object, httpx.AsyncClient]) -> None:
    _, client = emulator
    response = await client.post(
        "/v2/deployments", json=image_body(), headers={"X-Api-Key": KEY_SAAS}
    )
    assert response.status_code == 422
    assert response.json()["detail"][0]["loc"] == ["body", "source"]


async def test_duplicate_name_is_400(api: httpx.AsyncClient) -> None:
    # The published contract: POST answers 201, 400 or 422 (no 409).
    assert (await api.post("/v2/deployments", json=image_body("dup"))).status_code == 201
    again = await api.post("/v2/deployments", json=image_body("dup", image="other:2"))
    assert again.status_code == 400
    assert isinstance(again.json()["detail"], str)


async def test_twenty_concurrent_creates_of_one_name_make_exactly_one(
    api: httpx.AsyncClient,
) -> None:
    answers = await asyncio.gather(
        *(api.post("/v2/deployments", json=image_body("race")) for _ in range(20))
    )
    statuses = sorted(answer.status_code for answer in answers)
    assert statuses == [201] + [400] * 19
    listed = await api.get("/v2/deployments", params={"name": "race"})
    assert len(listed.json()["resources"]) == 1


async def test_get_unknown_deployment_is_404_with_detail(api: httpx.AsyncClient) -> None:
    missing = uuid.uuid4()
    response = await api.get(f"/v2/deployments/{missing}")
    assert response.status_code == 404
    assert response.json() == {"detail": f"Deployment ID {missing} not found."}
    revision = await api.get(f"/v2/deployments/{missing}/revisions/{uuid.uuid4()}")
    assert revision.status_code == 404
    assert revision.json() == {"detail": f"Deployment ID {missing} not found."}
    assert (await api.get(f"/v2/deployments/{missing}/revisions")).status_code == 404
    assert (await api.patch(f"/v2/deployments/{missing}", json={})).status_code == 404
    assert (await api.delete(f"/v2/deployments/{missing}")).status_code == 404


async def test_unknown_revision_of_a_known_deployment_is_404(api: httpx.AsyncClient) -> None:
    deployment_id = (await api.post("/v2/deployments", json=image_body())).json()["id"]
    response = await api.get(f"/v2/deployments/{deployment_id}/revisions/{uuid.uuid4()}")
    assert response.status_code == 404
    assert "not found" in response.json()["detail"]


async def test_list_filters_by_exact_name_and_substring_and_pages(
    api: httpx.AsyncClient,
) -> None:
    for name in ("alpha", "alpha-2", "beta", "gamma%_"):
        assert (await api.post("/v2/deployments", json=image_body(name))).status_code == 201
    exact = (await api.get("/v2/deployments", params={"name": "alpha"})).json()
    assert [d["name"] for d in exact["resources"]] == ["alpha"]
    assert exact["offset"] == 1  # published: always an integer, where the next page starts
    contains = (await api.get("/v2/deployments", params={"name_contains": "lph"})).json()
    assert sorted(d["name"] for d in contains["resources"]) == ["alpha", "alpha-2"]
    literal = (await api.get("/v2/deployments", params={"name_contains": "%_"})).json()
    assert [d["name"] for d in literal["resources"]] == ["gamma%_"]
    first = (await api.get("/v2/deployments", params={"limit": 3})).json()
    assert len(first["resources"]) == 3
    assert first["offset"] == 3
    rest = (await api.get("/v2/deployments", params={"limit": 3, "offset": 3})).json()
    assert len(rest["resources"]) == 1
    assert rest["offset"] == 4
    seen = [d["name"] for d in first["resources"] + rest["resources"]]
    assert sorted(seen) == ["alpha", "alpha-2", "beta", "gamma%_"]
    assert (await api.get("/v2/deployments", params={"limit": 0})).status_code == 422
    assert (await api.get("/v2/deployments", params={"offset": -1})).status_code == 422


async def test_patch_source_config_replaces_present_keys_and_null_clears(
    api: httpx.AsyncClient,
) -> None:
    body = image_body()
    body["source_config"] = {
        "resource_spec": {"min_scale": 1, "max_scale": 3},
        "custom_url": "https://a.example.com",
        "install_command": "make",
    }
    created = (await api.post("/v2/deployments", json=body)).json()
    response = await api.patch(
        f"/v2/deployments/{created['id']}",
        json={
            "source_config": {
                "resource_spec": {"max_scale": 5},
                "custom_url": None,
                "listener_config": {"k8s_namespace": "prod"},
            }
        },
    )
    assert response.status_code == 200
    config = response.json()["source_config"]
    assert config["resource_spec"]["max_scale"] == 5
    assert config["resource_spec"]["min_scale"] is None  # replaced whole
    # cleared: the emulator's own URL of the deployment again (every deployment has one)
    assert config["custom_url"] == f"https://{created['id']}.deployments.deployplane.example"
    assert config["install_command"] == "make"  # absent: kept
    assert config["listener_config"] == {"k8s_namespace": "prod"}
    # source_config alone makes no revision
    assert response.json()["latest_revision_id"] == created["latest_revision_id"]


async def test_patch_image_uri_makes_one_new_revision_even_if_equal(
    api: httpx.AsyncClient,
) -> None:
    created = (await api.post("/v2/deployments", json=image_body())).json()
    path = f"/v2/deployments/{created['id']}"
    same = await api.patch(
        path, json={"source_revision_config": {"image_uri": "registry.example.com/app:1"}}
    )
    assert same.status_code == 200
    second = same.json()["latest_revision_id"]
    assert second != created["latest_revision_id"]
    nulls = await api.patch(path, json={"source_revision_config": {"image_uri": None}})
    assert nulls.json()["latest_revision_id"] == second
    changed = await api.patch(path, json={"source_revision_config": {"image_uri": "r/app:2"}})
    assert changed.json()["source_revision_config"]["image_uri"] == "r/app:2"
    revisions = (await api.get(f"{path}/revisions")).json()["resources"]
    assert len(revisions) == 3
    assert revisions[0]["id"] == changed.json()["latest_revision_id"]  # newest first
    assert revisions[0]["source_revision_config"]["image_uri"] == "r/app:2"


async def test_patch_git_fields_keep_the_other_values(api: httpx.AsyncClient) -> None:
    created = (await api.post("/v2/deployments", json=git_body())).json()
    response = await api.patch(
        f"/v2/deployments/{created['id']}", json={"source_revision_config": {"repo_ref": "dev"}}
    )
    config = response.json()["source_revision_config"]
    assert config["repo_ref"] == "dev"
    assert config["graph_config_path"] == "langgraph.json"
    assert config["repo_commit_sha"] != created["source_revision_config"]["repo_commit_sha"]


async def test_patch_secrets_makes_a_revision_only_when_they_change(
    api: httpx.AsyncClient,
) -> None:
    created = (await api.post("/v2/deployments", json=image_body())).json()
    path = f"/v2/deployments/{created['id']}"
    same = {"secrets": [{"name": "OPENAI_API_KEY", "value": SECRET_VALUE}]}
    unchanged = (await api.patch(path, json=same)).json()
    assert unchanged["latest_revision_id"] == created["latest_revision_id"]
    new_value = {"secrets": [{"name": "OPENAI_API_KEY", "value": "rotated"}]}
    rotated = (await api.patch(path, json=new_value)).json()
    assert rotated["latest_revision_id"] != created["latest_revision_id"]
    renamed = (await api.patch(path, json={"secrets": [{"name": "B", "value": "rotated"}]})).json()
    assert renamed["secrets"] == [{"name": "B", "value": SECRET_VALUE_MASK}]
    assert renamed["latest_revision_id"] != rotated["latest_revision_id"]
    duplicate = await api.patch(
        path, json={"secrets": [{"name": "A", "value": "1"}, {"name": "A", "value": "2"}]}
    )
    assert duplicate.status_code == 422


async def test_patch_cannot_change_name_or_source(api: httpx.AsyncClient) -> None:
    created = (await api.post("/v2/deployments", json=image_body())).json()
    path = f"/v2/deployments/{created['id']}"
    renamed = await api.patch(path, json={"name": "other"})
    assert renamed.status_code == 422
    assert renamed.json()["detail"][0]["loc"] == ["body", "name"]
    resourced = await api.patch(path, json={"source": "git_host"})
    assert resourced.status_code == 422
    assert resourced.json()["detail"][0]["loc"] == ["body", "source"]
    same = await api.patch(path, json={"name": "img-app", "source": "external_docker"})
    assert same.status_code == 200


async def test_patch_refuses_fields_of_the_other_source(api: httpx.AsyncClient) -> None:
    created = (await api.post("/v2/deployments", json=image_body())).json()
    response = await api.patch(
        f"/v2/deployments/{created['id']}", json={"source_revision_config": {"repo_ref": "main"}}
    )
    assert response.status_code == 422
    assert response.json()["detail"][0]["loc"] == ["body", "source_revision_config", "repo_ref"]


async def test_delete_marks_awaiting_delete(api: httpx.AsyncClient) -> None:
    created = (await api.post("/v2/deployments", json=image_body())).json()
    response = await api.delete(f"/v2/deployments/{created['id']}")
    assert response.status_code == 204  # published: 204, empty body
    assert response.content == b""
    again = await api.get(f"/v2/deployments/{created['id']}")
    assert again.json()["status"] == "AWAITING_DELETE"
    assert (await api.delete(f"/v2/deployments/{created['id']}")).status_code == 204
    patch = await api.patch(f"/v2/deployments/{created['id']}", json={})
    assert patch.status_code == 400  # published PATCH answers: 200, 400, 404, 422


async def test_a_repeated_read_never_outlives_a_write(api: httpx.AsyncClient) -> None:
    created = (await api.post("/v2/deployments", json=image_body())).json()
    path = f"/v2/deployments/{created['id']}"
    revision_path = f"{path}/revisions/{created['latest_revision_id']}"
    own_url = f"https://{created['id']}.deployments.deployplane.example"
    assert (await api.get(path)).json()["source_config"]["custom_url"] == own_url
    assert (await api.get(revision_path)).json()["status"] == "CREATING"
    await api.patch(path, json={"source_config": {"custom_url": "https://b.example.com"}})
    assert (await api.get(path)).json()["source_config"]["custom_url"] == "https://b.example.com"
    await api.patch(path, json={"source_revision_config": {"image_uri": "r/app:9"}})
    assert (await api.get(revision_path)).json()["status"] == "SKIPPED"


@pytest.mark.parametrize("ref", ["refs//tags/v1", " refs/tags/v1", "refs/heads/../tags/v1"])
async def test_invalid_git_refs_are_refused(api: httpx.AsyncClient, ref: str) -> None:
    for build_on_push in (False, True):
        body = git_body("bad-ref", repo_ref=ref)
        body["source_config"]["build_on_push"] = build_on_push
        refused = await api.post("/v2/deployments", json=body)
        assert refused.status_code == 422, refused.text
        locs = [error["loc"] for error in refused.json()["detail"]]
        assert ["body", "source_revision_config", "repo_ref"] in locs
    created = (await api.post("/v2/deployments", json=git_body("good-ref"))).json()
    patched = await api.patch(
        f"/v2/deployments/{created['id']}", json={"source_revision_config": {"repo_ref": ref}}
    )
    assert patched.status_code == 422
    assert (await api.get("/v2/deployments", params={"name": "bad-ref"})).json()["resources"] == []


async def test_repo_url_must_be_a_repository_of_the_integration(api: httpx.AsyncClient) -> None:
    unlisted = "https://git.example.com/acme/not-listed"
    body = git_body("unlisted")
    body["source_config"]["repo_url"] = unlisted
    refused = await api.post("/v2/deployments", json=body)
    assert refused.status_code == 400, refused.text
    assert "repo_url" in refused.json()["detail"]
    assert str(INTEGRATION_A) in refused.json()["detail"]
    assert (await api.get("/v2/deployments", params={"name": "unlisted"})).json()["resources"] == []
    created = (await api.post("/v2/deployments", json=git_body("listed"))).json()
    path = f"/v2/deployments/{created['id']}"
    patched = await api.patch(path, json={"source_config": {"repo_url": unlisted}})
    assert patched.status_code == 400
    assert (await api.get(path)).json() == created


async def test_names_are_limited_to_the_documented_length(api: httpx.AsyncClient) -> None:
    longest = "n" * NAME_MAX_LENGTH
    created = await api.post("/v2/deployments", json=image_body(longest))
    assert created.status_code == 201
    for too_long in ("n" * (NAME_MAX_LENGTH + 1), "n" * 100_000):
        refused = await api.post("/v2/deployments", json=image_body(too_long))
        assert refused.status_code == 422
        assert refused.json()["detail"][0]["loc"] == ["body", "name"]
        assert too_long not in refused.text
        listener = {"compute_type": "k8s", "compute_id": too_long}
        refused = await api.post("/v2/listeners", json=listener)
        assert refused.status_code == 422
        assert refused.json()["detail"][0]["loc"] == ["body", "compute_id"]
    path = f"/v2/deployments/{created.json()['id']}"
    patched = await api.patch(path, json={"name": "n" * (NAME_MAX_LENGTH + 1)})
    assert patched.status_code == 422
    names = [d["name"] for d in (await api.get("/v2/deployments")).json()["resources"]]
    assert names == [longest]
