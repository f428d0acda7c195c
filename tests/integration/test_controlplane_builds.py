"""The vendor CLI's operations at the API: signed single-use uploads (refusals leave
nothing stored), the remote build, the push token, the log filters and offsets, and
the internal_* validation rules. On SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
import gzip
import hashlib
import json
import re
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from tests.support.emulator_app import make_settings, running_app, wait_for
from tests.support.internal_builds import build, internal, put, upload_url
from tests.support.published import assert_published
from tests.support.tarballs import tarball

pytestmark = pytest.mark.postgres

MAX_UPLOAD = 4096


GOOD = {
    "langgraph.json": json.dumps({"graphs": {"agent": "./agent.py:graph"}, "dependencies": ["."]}),
    "agent.py": "graph = None\n",
}


@pytest.fixture
async def emulator(database_url: str) -> AsyncIterator[tuple[FastAPI, httpx.AsyncClient]]:
    settings = make_settings(database_url, step_seconds=0.0).model_copy(
        update={"max_upload_bytes": MAX_UPLOAD}
    )
    async with running_app(settings) as pair:
        yield pair


async def settled(api: httpx.AsyncClient, dep: str) -> dict[str, Any]:
    async def probe() -> dict[str, Any] | None:
        revision = (await api.get(f"/v2/deployments/{dep}/revisions")).json()["resources"][0]
        return revision if revision["status"] in ("DEPLOYED", "BUILD_FAILED") else None

    revision: dict[str, Any] = await wait_for(probe)
    return revision


async def test_an_upload_builds_and_deploys_an_image_named_by_its_digest(
    emulator: tuple[FastAPI, httpx.AsyncClient],
) -> None:
    _, api = emulator
    dep = await internal(api, "built")
    url = await upload_url(api, dep)
    assert url["upload_headers"]["Content-Type"] == "application/gzip"
    data = tarball(GOOD)
    assert (await put(api, url, data)).status_code == 200
    patched = await build(api, dep, url["object_path"])
    assert patched.status_code == 200, patched.text
    assert_published("Deployment", patched.json())
    revision = await settled(api, dep)
    assert revision["status"] == "DEPLOYED"
    assert_published("Revision", revision)
    digest = hashlib.sha256(data).hexdigest()
    assert revision["source_revision_config"]["image_uri"] == (
        f"images.deployplane.example/built@sha256:{digest}"
    )
    assert revision["source_revision_config"]["source_tarball_path"] == url["object_path"]


async def test_refused_uploads_store_nothing(emulator: tuple[FastAPI, httpx.AsyncClient]) -> None:
    _, api = emulator
    dep = await internal(api, "refusals")
    url = await upload_url(api, dep)
    not_gzip = await put(api, url, b"just text, not a tarball")
    assert not_gzip.status_code == 400
    gzip_not_tar = await put(api, url, gzip.compress(b"not a tar inside"))
    assert gzip_not_tar.status_code == 400
    too_large = await put(api, url, b"\0" * (MAX_UPLOAD + 1))
    assert too_large.status_code == 413
    wrong_type = await put(api, url, tarball(GOOD), **{"Content-Type": "application/json"})
    assert wrong_type.status_code == 403  # the content type is signed
    forged = dict(url, upload_url=url["upload_url"].replace("signature=", "signature=0"))
    assert (await put(api, forged, tarball(GOOD))).status_code == 403
    # an expiry int() refuses (a superscript digit, past int's 4300 digits): 403, not a 500
    for expires in ("%C2%B2", "9" * 5000):
        bad = re.sub(r"expires=\d+", f"expires={expires}", url["upload_url"])
        assert (await put(api, dict(url, upload_url=bad), tarball(GOOD))).status_code == 403
    # none of those stored anything: the object cannot be built
    refused = await build(api, dep, url["object_path"])
    assert refused.status_code == 422
    assert refused.json()["detail"][0]["loc"] == [
        *("body", "source_revision_config", "source_tarball_path"),
    ]
    # the URL's one use is still open; a second use (a replay) is refused
    first = tarball(GOOD)
    assert (await put(api, url, first)).status_code == 200
    replay = await put(api, url, tarball({**GOOD, "agent.py": "graph = 'other'\n"}))
    assert replay.status_code == 409
    assert (await build(api, dep, url["object_path"])).status_code == 200
    revision = await settled(api, dep)
    assert revision["source_revision_config"]["image_uri"].endswith(
        hashlib.sha256(first).hexdigest()  # the first body, not the replayed one
    )


async def test_an_expired_upload_url_is_refused(database_url: str) -> None:
    settings = make_settings(database_url, step_seconds=0.0).model_copy(
        update={"upload_url_seconds": 0.0}
    )
    async with running_app(settings) as (_, api):
        dep = await internal(api, "late")
        url = await upload_url(api, dep)
        await asyncio.sleep(1.1)
        expired = await put(api, url, tarball(GOOD))
        assert expired.status_code == 403
        assert "expired" in expired.json()["detail"]
        assert (await build(api, dep, url["object_path"])).status_code == 422


async def test_an_upload_url_is_for_internal_source_and_a_push_token_for_internal_docker(
    emulator: tuple[FastAPI, httpx.AsyncClient],
) -> None:
    _, api = emulator
    pushed = await internal(api, "pushed", source="internal_docker")
    refused = await api.post(f"/v2/deployments/{pushed}/upload-url", json={})
    assert refused.status_code == 400
    token = await api.post(
        f"/v2/deployments/{pushed}/push-token", json={"supports_registry_username": True}
    )
    assert token.status_code == 200
    assert set(token.json()) >= {"registry_url", "token", "username", "repository_url"}
    image = f"{token.json()['repository_url']}@sha256:{'c' * 64}"
    patched = await api.patch(
        f"/v2/deployments/{pushed}",
        json={"revision_source": "internal_docker", "source_revision_config": {"image_uri": image}},
    )
    assert patched.status_code == 200, patched.text
    revision = await settled(api, pushed)
    assert revision["source"] == "internal_docker"
    assert (await api.get(f"/v2/deployments/{pushed}")).json()["image_version"] == image
    built = await internal(api, "built-too")
    no_token = await api.post(f"/v2/deployments/{built}/push-token", json={})
    assert no_token.status_code == 400
    assert no_token.json()["detail"] == (
        "Push token is only available for 'internal_docker' source deployments."
    )


async def test_internal_revisions_are_validated(
    emulator: tuple[FastAPI, httpx.AsyncClient],
) -> None:
    _, api = emulator
    dep = await internal(api, "checked")
    missing = await api.patch(
        f"/v2/deployments/{dep}",
        json={"revision_source": "internal_source", "source_revision_config": {"image_uri": "x"}},
    )
    assert missing.status_code == 422
    locs = [tuple(e["loc"]) for e in missing.json()["detail"]]
    assert ("body", "source_revision_config", "source_tarball_path") in locs
    git = await api.patch(f"/v2/deployments/{dep}", json={"revision_source": "git_host"})
    assert git.json()["detail"][0]["loc"] == ["body", "revision_source"]
    external = await api.post(
        "/v2/deployments",
        json={
            "name": "ext",
            "source": "external_docker",
            "source_config": {"deployment_type": "dev_zero"},
            "source_revision_config": {"image_uri": "r/x@sha256:" + "d" * 64},
        },
    )
    assert external.json()["detail"][0]["loc"] == ["body", "source_config", "deployment_type"]
    unknown_type = await api.post(
        "/v2/deployments",
        json={
            "name": "t",
            "source": "internal_source",
            "source_config": {"deployment_type": "huge"},
        },
    )
    assert unknown_type.status_code == 422


async def test_log_filters_and_offsets(emulator: tuple[FastAPI, httpx.AsyncClient]) -> None:
    _, api = emulator
    dep = await internal(api, "logged")
    url = await upload_url(api, dep)
    await put(api, url, tarball(GOOD))
    await build(api, dep, url["object_path"])
    revision = (await settled(api, dep))["id"]
    path = f"/v1/projects/{dep}/revisions/{revision}/build_logs"
    everything = (await api.post(path, json={"order": "asc", "limit": 100})).json()
    assert_logs(everything)
    messages = [line["message"] for line in everything["logs"]]
    assert messages[0] == "Build queued"
    assert "Build checks passed" in messages
    # asc, two at a time, following next_offset: every line once, in order
    seen: list[str] = []
    offset = None
    for _ in range(len(messages) + 1):
        body: dict[str, Any] = {"order": "asc", "limit": 2}
        if offset is not None:
            body["offset"] = offset
        page = (await api.post(path, json=body)).json()
        seen += [line["message"] for line in page["logs"]]
        offset = page["next_offset"]
    assert seen == messages
    newest = (await api.post(path, json={"order": "desc", "limit": 1})).json()["logs"]
    assert newest[0]["message"] == messages[-1]
    query = (await api.post(path, json={"query": "GRAPH 'AGENT'"})).json()["logs"]
    assert [line["message"] for line in query] == ["Graph 'agent': ./agent.py"]
    assert (await api.post(path, json={"level": "ERROR"})).json()["logs"] == []
    later = (await api.post(path, json={"start_time": "2999-01-01T00:00:00Z"})).json()
    assert later["logs"] == []
    earlier = (await api.post(path, json={"end_time": "2000-01-01T00:00:00Z"})).json()
    assert earlier["logs"] == []
    deploy = (await api.post(f"/v1/projects/{dep}/deploy_logs", json={})).json()
    assert deploy["logs"][0]["message"].startswith("Revision deployed; serving at https://")
    # past the seq column (32 bits on PostgreSQL), past int64, an Arabic-Indic digit
    for offset in ("not-an-offset", str(2**31), "9" * 32, "\u0661"):
        bad = await api.post(path, json={"offset": offset})
        assert bad.status_code == 422, (offset, bad.text)
        assert bad.json()["detail"][0]["loc"] == ["body", "offset"]
    assert (await api.post(path, json={"limit": 0})).status_code == 422
    other = "00000000-0000-4000-8000-000000000000"
    gone = await api.post(f"/v1/projects/{dep}/revisions/{other}/build_logs", json={})
    assert gone.status_code == 404
    assert (await api.post(f"/v1/projects/{other}/deploy_logs", json={})).status_code == 404


def assert_logs(page: dict[str, Any]) -> None:
    assert set(page) == {"logs", "next_offset"}
    for line in page["logs"]:
        assert set(line) == {"id", "timestamp", "level", "message"}
        assert isinstance(line["timestamp"], int)
