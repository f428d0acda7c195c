"""The published contract of the deployment operations, checked against the emulator.

Written from the facts of issue 13 and /work/shared/spec/published-contract.json (not
from the emulator's code): status codes, body shapes (empty 204 bodies included),
paging to the last page, every list filter, bulk delete with a partial failure, redeploy
(the new revision carries the old image and reaches DEPLOYED) and the organization-key
403. The emulator's pipeline is driven by hand (`settle`), so no test waits on time.
"""

from __future__ import annotations

import time
import uuid
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import text
from tests.support.emulator_app import (
    KEY_SHARED,
    WORKSPACE_A,
    api,
    emulator,
    git_body,
    image_body,
    make_settings,
    running_app,
)

from deployplane.emulator.store.db import Database

__all__ = ["api", "emulator"]

DEPLOYMENT_FIELDS = {
    "name",
    "source",
    "source_config",
    "source_revision_config",
    "secrets",
    "id",
    "tenant_id",
    "created_at",
    "updated_at",
    "status",
    "latest_revision_id",
    "active_revision_id",
}
REVISION_FIELDS = {"id", "created_at", "updated_at", "status", "source", "source_revision_config"}


_clock = [time.time() + 10**7]


async def settle(app: FastAPI) -> None:
    """Runs the pipeline until no revision moves: every revision reaches its end. Each
    round runs at a later (pretend) time than the steps the previous one scheduled."""
    while True:
        _clock[0] += 10**5
        if not await app.state.pipeline.advance_due(now=_clock[0]):
            return


async def create(api: httpx.AsyncClient, body: dict[str, Any]) -> dict[str, Any]:
    answer = await api.post("/v2/deployments", json=body)
    assert answer.status_code == 201, answer.text
    created: dict[str, Any] = answer.json()
    return created


def names(body: dict[str, Any]) -> list[str]:
    return [d["name"] for d in body["resources"]]


def assert_list_body(body: Any) -> None:
    assert set(body) == {"resources", "offset"}
    assert isinstance(body["offset"], int)
    assert not isinstance(body["offset"], bool)


def query_error_fields(answer: httpx.Response) -> list[Any]:
    assert answer.status_code == 422, answer.text
    return [entry["loc"][-1] for entry in answer.json()["detail"]]


# ----------------------------------------------------------------------- shapes


async def test_every_deployment_answer_carries_the_published_fields(
    api: httpx.AsyncClient,
) -> None:
    created = await create(api, image_body("shape"))
    assert set(created) >= DEPLOYMENT_FIELDS
    assert created["tenant_id"] == str(WORKSPACE_A)
    got = (await api.get(f"/v2/deployments/{created['id']}")).json()
    listed = (await api.get("/v2/deployments")).json()["resources"][0]
    for body in (got, listed):
        assert set(body) >= DEPLOYMENT_FIELDS
        assert body["tenant_id"] == str(WORKSPACE_A)


async def test_secret_references_round_trip_on_create_and_patch(api: httpx.AsyncClient) -> None:
    refs = [{"name": "OPENAI_API_KEY", "secret_name": "llm", "secret_key": "openai"}]
    body = {**image_body("refs"), "secret_references": refs}
    created = await create(api, body)
    assert created["secret_references"] == refs
    path = f"/v2/deployments/{created['id']}"
    assert (await api.get(path)).json()["secret_references"] == refs
    new = [{"name": "TOKEN", "secret_name": "other", "secret_key": "token"}]
    patched = await api.patch(path, json={"secret_references": new})
    assert patched.status_code == 200
    assert patched.json()["secret_references"] == new
    # the environment changed: a new revision applies it; the same list again does not
    assert patched.json()["latest_revision_id"] != created["latest_revision_id"]
    again = await api.patch(path, json={"secret_references": new})
    assert again.json()["latest_revision_id"] == patched.json()["latest_revision_id"]


async def test_a_refused_create_is_400_with_a_one_sentence_detail(api: httpx.AsyncClient) -> None:
    await create(api, image_body("taken"))
    again = await api.post("/v2/deployments", json=image_body("taken"))
    assert again.status_code == 400
    assert set(again.json()) == {"detail"}
    assert isinstance(again.json()["detail"], str)
    invalid = await api.post("/v2/deployments", json={"name": "x"})
    assert invalid.status_code == 422
    for entry in invalid.json()["detail"]:
        assert set(entry) == {"loc", "msg", "type"}


# ----------------------------------------------------------------------- paging


async def test_default_limit_is_20_and_offset_pages_to_the_last_page(
    api: httpx.AsyncClient,
) -> None:
    for i in range(45):
        await create(api, image_body(f"page-{i:02d}"))
    first = (await api.get("/v2/deployments")).json()
    assert_list_body(first)
    assert len(first["resources"]) == 20
    seen: list[str] = []
    offset = 0
    pages = 0
    while True:
        answer = await api.get("/v2/deployments", params={"limit": 20, "offset": offset})
        assert answer.status_code == 200
        body = answer.json()
        assert_list_body(body)
        seen += names(body)
        pages += 1
        if len(body["resources"]) < 20:
            break
        assert body["offset"] > offset
        offset = body["offset"]
    assert pages == 3
    assert sorted(seen) == [f"page-{i:02d}" for i in range(45)]
    beyond = (await api.get("/v2/deployments", params={"offset": 1000})).json()
    assert beyond["resources"] == []
    assert_list_body(beyond)


@pytest.mark.parametrize("limit", [0, 101, -1])
async def test_limit_outside_1_to_100_is_422_naming_limit(
    api: httpx.AsyncClient, limit: int
) -> None:
    created = await create(api, image_body("one"))
    for path in (
        "/v2/deployments",
        f"/v2/deployments/{created['id']}/revisions",
        "/v2/listeners",
    ):
        answer = await api.get(path, params={"limit": limit})
        assert query_error_fields(answer) == ["limit"]


async def test_negative_offset_is_422_naming_offset(api: httpx.AsyncClient) -> None:
    answer = await api.get("/v2/deployments", params={"offset": -1})
    assert query_error_fields(answer) == ["offset"]


async def test_any_offset_past_the_last_item_is_an_empty_page(api: httpx.AsyncClient) -> None:
    """The published `offset` has no maximum: however far past the end (beyond what a
    database integer holds too), the page is empty and `offset` says where it started."""
    created = await create(api, image_body())
    for far in (10**9 + 1, 2**63, 2**70):
        for path in (
            "/v2/deployments",
            f"/v2/deployments/{created['id']}/revisions",
            "/v2/listeners",
        ):
            answer = await api.get(path, params={"offset": far})
            assert answer.status_code == 200, (path, answer.text)
            assert answer.json() == {"resources": [], "offset": far}


# ---------------------------------------------------------------------- filters


async def test_name_contains_is_a_substring_filter(api: httpx.AsyncClient) -> None:
    for name in ("alpha", "alpha-2", "beta"):
        await create(api, image_body(name))
    body = (await api.get("/v2/deployments", params={"name_contains": "lph"})).json()
    assert sorted(names(body)) == ["alpha", "alpha-2"]


async def test_status_image_version_and_remote_reconciled_filters(
    emulator: tuple[FastAPI, httpx.AsyncClient],
) -> None:
    app, api = emulator
    done = await create(api, image_body("done", image="registry.example.com/app:7"))
    await settle(app)
    fresh = await create(api, image_body("fresh"))

    def only(body: dict[str, Any]) -> list[str]:
        return sorted(names(body))

    ready = (await api.get("/v2/deployments", params={"status": "READY"})).json()
    assert only(ready) == ["done"]
    waiting = (await api.get("/v2/deployments", params={"status": "AWAITING_DATABASE"})).json()
    assert only(waiting) == ["fresh"]
    image = {"image_version": "registry.example.com/app:7"}
    assert only((await api.get("/v2/deployments", params=image)).json()) == ["done"]
    applied = (await api.get("/v2/deployments", params={"remote_reconciled": "true"})).json()
    assert only(applied) == ["done"]
    pending = (await api.get("/v2/deployments", params={"remote_reconciled": "false"})).json()
    assert only(pending) == ["fresh"]
    # a new revision of `done` is not applied yet: the latest revision decides
    patch = {"source_revision_config": {"image_uri": "registry.example.com/app:8"}}
    assert (await api.patch(f"/v2/deployments/{done['id']}", json=patch)).status_code == 200
    pending = (await api.get("/v2/deployments", params={"remote_reconciled": "false"})).json()
    assert only(pending) == ["done", "fresh"]
    assert fresh["id"] in {d["id"] for d in pending["resources"]}


async def test_deployment_type_filter_and_field(api: httpx.AsyncClient) -> None:
    body = git_body("typed")
    body["source_config"]["deployment_type"] = "dev"
    created = await create(api, body)
    assert created["source_config"]["deployment_type"] == "dev"
    await create(api, git_body("untyped"))
    dev = (await api.get("/v2/deployments", params={"deployment_type": "dev"})).json()
    assert names(dev) == ["typed"]
    prod = (await api.get("/v2/deployments", params={"deployment_type": "prod"})).json()
    assert names(prod) == []
    bad = await api.get("/v2/deployments", params={"deployment_type": "huge"})
    assert query_error_fields(bad) == ["deployment_type"]


async def test_deployment_ids_is_a_comma_separated_list(api: httpx.AsyncClient) -> None:
    a = await create(api, image_body("a"))
    await create(api, image_body("b"))
    c = await create(api, image_body("c"))
    params = {"deployment_ids": f"{a['id']},{c['id']},{uuid.uuid4()}"}
    body = (await api.get("/v2/deployments", params=params)).json()
    assert sorted(names(body)) == ["a", "c"]
    bad = await api.get("/v2/deployments", params={"deployment_ids": "not-a-uuid"})
    assert query_error_fields(bad) == ["deployment_ids"]


async def test_tag_value_ids_and_unknown_parameters_are_accepted_and_ignored(
    api: httpx.AsyncClient,
) -> None:
    await create(api, image_body("tagged"))
    plain = (await api.get("/v2/deployments")).json()
    tagged = await api.get("/v2/deployments", params={"tag_value_ids": "x,y", "colour": "red"})
    assert tagged.status_code == 200
    assert names(tagged.json()) == names(plain)


# -------------------------------------------------------------------- revisions


async def test_revisions_newest_first_with_status_and_remote_reconciled_filters(
    emulator: tuple[FastAPI, httpx.AsyncClient],
) -> None:
    app, api = emulator
    created = await create(api, image_body("revs", image="r/app:1"))
    path = f"/v2/deployments/{created['id']}"
    await settle(app)
    await api.patch(path, json={"source_revision_config": {"image_uri": "r/app:2"}})
    await settle(app)
    await api.patch(path, json={"source_revision_config": {"image_uri": "r/app:3"}})
    listed = (await api.get(f"{path}/revisions")).json()
    assert_list_body(listed)
    images = [r["source_revision_config"]["image_uri"] for r in listed["resources"]]
    assert images == ["r/app:3", "r/app:2", "r/app:1"]
    for revision in listed["resources"]:
        assert set(revision) >= REVISION_FIELDS
    deployed = (await api.get(f"{path}/revisions", params={"status": "DEPLOYED"})).json()
    assert len(deployed["resources"]) == 2
    both = {"status": "DEPLOYED,CREATING"}
    assert len((await api.get(f"{path}/revisions", params=both)).json()["resources"]) == 3
    applied = {"remote_reconciled": "true"}
    assert len((await api.get(f"{path}/revisions", params=applied)).json()["resources"]) == 2
    page = (await api.get(f"{path}/revisions", params={"limit": 2})).json()
    rest = (await api.get(f"{path}/revisions", params={"offset": page["offset"]})).json()
    assert [r["id"] for r in page["resources"] + rest["resources"]] == [
        r["id"] for r in listed["resources"]
    ]
    unknown = await api.get(f"/v2/deployments/{uuid.uuid4()}/revisions")
    assert unknown.status_code == 404


# ----------------------------------------------------------------------- delete


async def test_delete_is_204_with_an_empty_body_and_404_when_unknown(
    api: httpx.AsyncClient,
) -> None:
    created = await create(api, image_body("gone"))
    answer = await api.delete(f"/v2/deployments/{created['id']}")
    assert answer.status_code == 204
    assert answer.content == b""
    missing = await api.delete(f"/v2/deployments/{uuid.uuid4()}")
    assert missing.status_code == 404
    assert "not found" in missing.json()["detail"]


async def test_the_tracing_project_stays_unless_delete_tracing_project(
    emulator: tuple[FastAPI, httpx.AsyncClient],
) -> None:
    app, api = emulator
    kept = await create(api, image_body("kept"))
    dropped = await create(api, image_body("dropped"))
    assert (await api.delete(f"/v2/deployments/{kept['id']}")).status_code == 204
    path = f"/v2/deployments/{dropped['id']}"
    assert (await api.delete(path, params={"delete_tracing_project": "true"})).status_code == 204
    await settle(app)
    assert (await api.get(f"/v2/deployments/{kept['id']}")).status_code == 404
    # the kept tracing project still holds its name; the deleted one freed it
    assert (await api.post("/v2/deployments", json=image_body("kept"))).status_code == 400
    assert (await api.post("/v2/deployments", json=image_body("dropped"))).status_code == 201


async def test_bulk_delete_all_gone_is_200(api: httpx.AsyncClient) -> None:
    ids = [(await create(api, image_body(f"bulk-{i}")))["id"] for i in range(3)]
    answer = await api.delete("/v2/deployments", params={"deployment_ids": ids})
    assert answer.status_code == 200
    outcomes = answer.json()["results"]
    assert [o["deployment_id"] for o in outcomes] == ids
    assert {o["status"] for o in outcomes} == {204}
    for deployment_id in ids:
        got = (await api.get(f"/v2/deployments/{deployment_id}")).json()
        assert got["status"] == "AWAITING_DELETE"


async def test_bulk_delete_with_unknown_ids_is_207_naming_them(api: httpx.AsyncClient) -> None:
    known = (await create(api, image_body("known")))["id"]
    unknown = str(uuid.uuid4())
    answer = await api.delete("/v2/deployments", params={"deployment_ids": [known, unknown]})
    assert answer.status_code == 207
    outcomes = {o["deployment_id"]: o for o in answer.json()["results"]}
    assert outcomes[known]["status"] == 204
    assert outcomes[unknown]["status"] == 404
    assert unknown in outcomes[unknown]["detail"]
    assert (await api.get(f"/v2/deployments/{known}")).json()["status"] == "AWAITING_DELETE"
    all_unknown = await api.delete("/v2/deployments", params={"deployment_ids": [unknown]})
    assert all_unknown.status_code == 404
    assert unknown in all_unknown.json()["detail"]


async def test_bulk_delete_takes_at_most_100_ids(api: httpx.AsyncClient) -> None:
    ids = [str(uuid.uuid4()) for _ in range(101)]
    answer = await api.delete("/v2/deployments", params={"deployment_ids": ids})
    assert query_error_fields(answer) == ["deployment_ids"]
    assert query_error_fields(await api.delete("/v2/deployments")) == ["deployment_ids"]


# ---------------------------------------------------------------------- redeploy


async def test_redeploy_makes_a_new_revision_with_the_old_image_that_deploys(
    emulator: tuple[FastAPI, httpx.AsyncClient],
) -> None:
    app, api = emulator
    created = await create(api, image_body("roll", image="r/app:1"))
    path = f"/v2/deployments/{created['id']}"
    first_revision = created["latest_revision_id"]
    await settle(app)
    await api.patch(path, json={"source_revision_config": {"image_uri": "r/app:2"}})
    await settle(app)
    assert (await api.get(path)).json()["image_version"] == "r/app:2"

    answer = await api.post(f"{path}/revisions/{first_revision}/redeploy")
    assert answer.status_code == 200
    deployment = answer.json()
    assert set(deployment) >= DEPLOYMENT_FIELDS
    new_revision = deployment["latest_revision_id"]
    assert new_revision not in (first_revision, None)
    assert deployment["source_revision_config"]["image_uri"] == "r/app:1"
    await settle(app)
    revision = (await api.get(f"{path}/revisions/{new_revision}")).json()
    assert revision["status"] == "DEPLOYED"
    assert revision["source_revision_config"]["image_uri"] == "r/app:1"
    after = (await api.get(path)).json()
    assert after["active_revision_id"] == new_revision
    assert after["image_version"] == "r/app:1"
    assert len((await api.get(f"{path}/revisions")).json()["resources"]) == 3


async def test_redeploy_of_a_git_revision_keeps_its_commit(
    emulator: tuple[FastAPI, httpx.AsyncClient],
) -> None:
    app, api = emulator
    created = await create(api, git_body("git-roll"))
    path = f"/v2/deployments/{created['id']}"
    await settle(app)
    old = (await api.get(f"{path}/revisions/{created['latest_revision_id']}")).json()
    await api.patch(path, json={"source_revision_config": {"repo_ref": "develop"}})
    await settle(app)
    answer = await api.post(f"{path}/revisions/{old['id']}/redeploy")
    assert answer.status_code == 200
    config = answer.json()["source_revision_config"]
    assert config["repo_ref"] == "main"
    assert config["repo_commit_sha"] == old["source_revision_config"]["repo_commit_sha"]


async def test_redeploy_404s_and_400(emulator: tuple[FastAPI, httpx.AsyncClient]) -> None:
    _app, api = emulator
    mine = await create(api, image_body("mine"))
    other = await create(api, image_body("other"))
    path = f"/v2/deployments/{mine['id']}"
    # a revision of another deployment is not found here
    foreign = await api.post(f"{path}/revisions/{other['latest_revision_id']}/redeploy")
    assert foreign.status_code == 404
    unknown = await api.post(f"{path}/revisions/{uuid.uuid4()}/redeploy")
    assert unknown.status_code == 404
    nowhere = await api.post(
        f"/v2/deployments/{uuid.uuid4()}/revisions/{mine['latest_revision_id']}/redeploy"
    )
    assert nowhere.status_code == 404
    # a revision still in progress (it never deployed) cannot be redeployed
    refused = await api.post(f"{path}/revisions/{mine['latest_revision_id']}/redeploy")
    assert refused.status_code == 400
    detail = refused.json()["detail"]
    assert isinstance(detail, str)
    assert "DEPLOYED" in detail


# -------------------------------------------------------------------------- auth


async def test_an_organization_key_without_x_tenant_id_is_403_naming_the_need(
    api: httpx.AsyncClient,
) -> None:
    answer = await api.get("/v2/deployments", headers={"X-Api-Key": KEY_SHARED})
    assert answer.status_code == 403
    assert "workspace" in answer.json()["detail"]
    named = {"X-Api-Key": KEY_SHARED, "X-Tenant-Id": str(WORKSPACE_A)}
    assert (await api.get("/v2/deployments", headers=named)).status_code == 200


# ------------------------------------------------------- published field rules


async def test_git_host_gets_its_url_from_the_service_and_may_not_set_it(
    api: httpx.AsyncClient,
) -> None:
    created = await create(api, git_body("git-url"))
    assert created["source_config"]["custom_url"].startswith("https://")
    body = git_body("git-own-url")
    body["source_config"]["custom_url"] = "https://mine.example"
    answer = await api.post("/v2/deployments", json=body)
    assert query_error_fields(answer) == ["custom_url"]
    docker = {**image_body("docker-url"), "source_config": {"custom_url": "https://d.example"}}
    assert (await create(api, docker))["source_config"]["custom_url"] == "https://d.example"


async def test_deployment_type_is_git_host_only_and_immutable(api: httpx.AsyncClient) -> None:
    docker = {**image_body("docker-typed"), "source_config": {"deployment_type": "dev"}}
    assert query_error_fields(await api.post("/v2/deployments", json=docker)) == ["deployment_type"]
    body = git_body("git-typed")
    body["source_config"]["deployment_type"] = "dev"
    created = await create(api, body)
    path = f"/v2/deployments/{created['id']}"
    change = await api.patch(path, json={"source_config": {"deployment_type": "prod"}})
    assert query_error_fields(change) == ["deployment_type"]
    same = await api.patch(path, json={"source_config": {"deployment_type": "dev"}})
    assert same.status_code == 200


async def test_secret_references_are_external_docker_only(api: httpx.AsyncClient) -> None:
    refs = [{"name": "K", "secret_name": "s", "secret_key": "k"}]
    answer = await api.post(
        "/v2/deployments", json={**git_body("git-refs"), "secret_references": refs}
    )
    assert query_error_fields(answer) == ["secret_references"]


# -------------------------------------------------------------- earlier databases


@pytest.mark.postgres
async def test_a_database_from_before_these_columns_gets_them_and_keeps_its_rows(
    database_url: str,
) -> None:
    async with running_app(make_settings(database_url, step_seconds=3600)) as (_, api):
        old = await create(api, image_body("from-before"))
    db = Database(database_url)
    async with db.write() as conn:
        for table, column in (
            ("revisions", "remote_reconciled"),
            ("deployments", "delete_tracing_project"),
            ("deployments", "secret_references"),
        ):
            await conn.execute(text(f"ALTER TABLE {table} DROP COLUMN {column}"))
    await db.dispose()
    async with running_app(make_settings(database_url, step_seconds=3600)) as (_, api):
        got = (await api.get(f"/v2/deployments/{old['id']}")).json()
        assert got["name"] == "from-before"
        assert got["secret_references"] is None
        pending = (await api.get("/v2/deployments", params={"remote_reconciled": "false"})).json()
        assert names(pending) == ["from-before"]
        assert (await api.delete(f"/v2/deployments/{old['id']}")).status_code == 204
