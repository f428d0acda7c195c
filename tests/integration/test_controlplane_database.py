"""What the database underneath can change: concurrent writers, the pipeline racing
requests, text PostgreSQL cannot store, substring matching, and (PostgreSQL only)
several emulators sharing one database. Each test runs on SQLite and PostgreSQL
unless it says otherwise (conftest.py)."""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections.abc import AsyncIterator, Iterator
from contextlib import AsyncExitStack

import httpx
import pytest
from tests.support.emulator_app import (
    K8S_LISTENER,
    image_body,
    make_settings,
    running_app,
    wait_for,
)

pytestmark = pytest.mark.postgres

SUPERSEDED = {"SKIPPED", "INTERRUPTED"}


@pytest.fixture(autouse=True)
def no_pipeline_errors(caplog: pytest.LogCaptureFixture) -> Iterator[None]:
    """A worker round that failed (a deadlock, a unique violation) is retried a second
    later, so the tests' end state could hide it: it fails the test here instead."""
    yield
    failed = [
        record.getMessage()
        for record in caplog.records
        if record.name.startswith("deployplane.emulator") and record.levelno >= logging.ERROR
    ]
    assert failed == []


async def revisions_of(client: httpx.AsyncClient, deployment_id: str) -> list[dict[str, str]]:
    """Oldest first."""
    listed = await client.get(f"/v2/deployments/{deployment_id}/revisions", params={"limit": 100})
    assert listed.status_code == 200, listed.text
    return list(reversed(listed.json()["resources"]))


def assert_history_is_sound(deployment: dict[str, str], history: list[dict[str, str]]) -> None:
    """A deployment whose latest revision deployed, and whose older revisions either
    were superseded or had deployed before the next one was made (a superseded
    revision that moved on afterwards would show a later update)."""
    assert deployment["latest_revision_id"] == history[-1]["id"]
    assert history[-1]["status"] == "DEPLOYED", history[-1]
    assert deployment["active_revision_id"] == history[-1]["id"]
    for older, newer in itertools.pairwise(history):
        assert older["status"] in SUPERSEDED | {"DEPLOYED"}, older
        if older["status"] == "DEPLOYED":
            assert older["updated_at"] <= newer["created_at"], (older, newer)


async def test_concurrent_patches_of_one_deployment_each_make_a_revision(
    database_url: str,
) -> None:
    async with running_app(make_settings(database_url, step_seconds=3600)) as (_, api):
        created = (await api.post("/v2/deployments", json=image_body())).json()
        path = f"/v2/deployments/{created['id']}"
        answers = await asyncio.gather(
            *(
                api.patch(path, json={"source_revision_config": {"image_uri": f"r/app:{i}"}})
                for i in range(10)
            )
        )
        assert [answer.status_code for answer in answers] == [200] * 10
        history = await revisions_of(api, created["id"])
        assert len(history) == 11
        assert [r["status"] for r in history] == ["SKIPPED"] * 10 + ["CREATING"]
        latest = (await api.get(path)).json()["latest_revision_id"]
        assert latest == history[-1]["id"]


async def test_patches_racing_the_pipeline_never_revive_a_superseded_revision(
    database_url: str,
) -> None:
    """The worker moves revisions while PATCHes supersede them; on PostgreSQL both run
    at once. A superseded revision must stay superseded."""
    async with running_app(make_settings(database_url, step_seconds=0.005)) as (_, api):
        ids = []
        for i in range(12):
            created = await api.post("/v2/deployments", json=image_body(f"race-{i}"))
            assert created.status_code == 201
            ids.append(created.json()["id"])
        for round_ in range(6):
            answers = await asyncio.gather(
                *(
                    api.patch(
                        f"/v2/deployments/{deployment_id}",
                        json={"source_revision_config": {"image_uri": f"r/app:{round_}"}},
                    )
                    for deployment_id in ids
                )
            )
            assert {answer.status_code for answer in answers} == {200}
            await asyncio.sleep(0.01)

        async def settled() -> bool:
            for deployment_id in ids:
                history = await revisions_of(api, deployment_id)
                if history[-1]["status"] != "DEPLOYED":
                    return False
            return True

        await wait_for(settled)
        for deployment_id in ids:
            deployment = (await api.get(f"/v2/deployments/{deployment_id}")).json()
            assert_history_is_sound(deployment, await revisions_of(api, deployment_id))


async def test_delete_racing_creates_of_its_name(database_url: str) -> None:
    async with running_app(make_settings(database_url, step_seconds=0.01)) as (_, api):
        first = (await api.post("/v2/deployments", json=image_body("reused"))).json()
        # With its tracing project, else that keeps the name taken.
        path = f"/v2/deployments/{first['id']}?delete_tracing_project=true"
        assert (await api.delete(path)).status_code == 204

        async def recreated() -> str | None:
            answer = await api.post("/v2/deployments", json=image_body("reused"))
            assert answer.status_code in (201, 400), answer.text
            return answer.json()["id"] if answer.status_code == 201 else None

        second = await wait_for(recreated, interval=0.002)
        assert second != first["id"]
        assert (await api.get(f"/v2/deployments/{first['id']}")).status_code == 404
        listed = (await api.get("/v2/deployments", params={"name": "reused"})).json()
        assert [d["id"] for d in listed["resources"]] == [second]


async def test_text_with_nul_is_refused_on_every_database(database_url: str) -> None:
    """PostgreSQL text cannot hold U+0000, so no request string may: 422 naming the
    field (never echoing the value), whatever the database."""
    async with running_app(make_settings(database_url, step_seconds=3600)) as (_, api):
        bad_name = await api.post("/v2/deployments", json=image_body("a\u0000b"))
        assert bad_name.status_code == 422
        assert bad_name.json()["detail"][0]["loc"] == ["body", "name"]
        bad_image = await api.post("/v2/deployments", json=image_body(image="r/app:\u0000"))
        assert bad_image.status_code == 422
        assert bad_image.json()["detail"][0]["loc"] == [
            "body",
            "source_revision_config",
            "image_uri",
        ]
        secret = image_body("s")
        secret["secrets"] = [{"name": "K", "value": "sk-hidden\u0000"}]
        refused = await api.post("/v2/deployments", json=secret)
        assert refused.status_code == 422
        assert refused.json()["detail"][0]["loc"] == ["body", "secrets", 0, "value"]
        assert "sk-hidden" not in refused.text
        # an escaped backslash followed by u0000 is six ordinary characters
        literal = await api.post("/v2/deployments", json=image_body("lit\\u0000"))
        assert literal.status_code == 201, literal.text
        assert literal.json()["name"] == "lit\\u0000"

        created = (await api.post("/v2/deployments", json=image_body())).json()
        path = f"/v2/deployments/{created['id']}"
        patched = await api.patch(path, json={"source_config": {"custom_url": "https://\u0000"}})
        assert patched.status_code == 422
        assert patched.json()["detail"][0]["loc"] == ["body", "source_config", "custom_url"]
        for params in ({"name": "a\u0000"}, {"name_contains": "\u0000"}):
            listed = await api.get("/v2/deployments", params=params)
            assert listed.status_code == 422, params
            assert listed.json()["detail"][0]["loc"] == ["query", next(iter(params))]

        listener = await api.post("/v2/listeners", json={**K8S_LISTENER, "compute_id": "c\u0000"})
        assert listener.status_code == 422
        assert listener.json()["detail"][0]["loc"] == ["body", "compute_id"]
        good = (await api.post("/v2/listeners", json=K8S_LISTENER)).json()
        lpath = f"/v2/listeners/{good['id']}"
        assert (await api.patch(lpath, json={"version": "\u0000"})).status_code == 422
        put = await api.put(lpath, json={**K8S_LISTENER, "version": "1\u0000"})
        assert put.status_code == 422
        assert (await api.get("/v2/listeners", params={"compute_id": "\u0000"})).status_code == 422
        # nothing of the refused requests was written
        assert (await api.get(lpath)).json() == good
        names = [d["name"] for d in (await api.get("/v2/deployments")).json()["resources"]]
        assert sorted(names) == ["img-app", "lit\\u0000"]


async def test_name_contains_is_a_case_sensitive_literal_substring(database_url: str) -> None:
    async with running_app(make_settings(database_url, step_seconds=3600)) as (_, api):
        for name in ("Alpha", "alpha-2", "50%_off", "a_b", "Ünïcode"):
            assert (await api.post("/v2/deployments", json=image_body(name))).status_code == 201

        async def matching(needle: str) -> list[str]:
            page = await api.get("/v2/deployments", params={"name_contains": needle})
            assert page.status_code == 200
            return sorted(d["name"] for d in page.json()["resources"])

        assert await matching("lpha") == ["Alpha", "alpha-2"]
        assert await matching("alpha") == ["alpha-2"]
        assert await matching("ALPHA") == []
        assert await matching("%") == ["50%_off"]
        assert await matching("_") == ["50%_off", "a_b"]
        assert await matching("Ün") == ["Ünïcode"]
        assert await matching("ün") == []


# ------------------------------------------------- several emulators on one database


@pytest.fixture
async def two_emulators(database_url: str) -> AsyncIterator[list[httpx.AsyncClient]]:
    """Two apps (two engines, two pipeline workers) started at once on one empty database.

    PostgreSQL only: several processes on one SQLite file are not supported (each would
    cache reads, and the file takes one writer at a time)."""
    assert database_url.startswith("postgresql")
    settings = make_settings(database_url, step_seconds=0.01)
    async with AsyncExitStack() as stack:
        pairs = await asyncio.gather(
            stack.enter_async_context(running_app(settings)),
            stack.enter_async_context(running_app(settings)),
        )
        yield [client for _, client in pairs]


@pytest.mark.postgres(only=True)
async def test_emulators_sharing_a_database_see_each_others_writes(
    two_emulators: list[httpx.AsyncClient],
) -> None:
    a, b = two_emulators
    created = (await a.post("/v2/deployments", json=image_body())).json()
    path = f"/v2/deployments/{created['id']}"
    assert (await b.get(path)).json()["name"] == "img-app"
    assert (await b.post("/v2/deployments", json=image_body())).status_code == 400
    patched = (
        await a.patch(path, json={"source_revision_config": {"image_uri": "r/app:2"}})
    ).json()
    assert (await b.get(path)).json()["latest_revision_id"] == patched["latest_revision_id"]

    async def deployed_everywhere() -> bool:
        seen = [(await client.get(path)).json() for client in (a, b)]
        return all(d["active_revision_id"] == patched["latest_revision_id"] for d in seen)

    await wait_for(deployed_everywhere)
    assert (await b.delete(path)).status_code == 204

    async def gone() -> bool:
        answers = [await client.get(path) for client in (a, b)]
        return all(answer.status_code == 404 for answer in answers)

    await wait_for(gone)


@pytest.mark.postgres(only=True)
async def test_two_pipeline_workers_share_the_revisions_soundly(
    two_emulators: list[httpx.AsyncClient],
) -> None:
    a, b = two_emulators
    ids = []
    for i in range(16):
        client = (a, b)[i % 2]
        created = await client.post("/v2/deployments", json=image_body(f"shared-{i}"))
        assert created.status_code == 201
        ids.append(created.json()["id"])
    for i, deployment_id in enumerate(ids):
        patched = await (b, a)[i % 2].patch(
            f"/v2/deployments/{deployment_id}",
            json={"source_revision_config": {"image_uri": "r/app:2"}},
        )
        assert patched.status_code == 200

    async def settled() -> bool:
        for deployment_id in ids:
            if (await revisions_of(a, deployment_id))[-1]["status"] != "DEPLOYED":
                return False
        return True

    await wait_for(settled)
    for deployment_id in ids:
        deployment = (await b.get(f"/v2/deployments/{deployment_id}")).json()
        assert_history_is_sound(deployment, await revisions_of(b, deployment_id))
