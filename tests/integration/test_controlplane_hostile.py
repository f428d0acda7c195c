"""Hostile JSON bodies (issue 14, findings 1-3): refused with 422 naming the place,
before anything is written, on SQLite and PostgreSQL alike; the lists keep answering.

Bodies are sent as raw text: lone surrogates, `NaN`, `Infinity`, `1e400` and huge
integers are exactly what a well-behaved JSON encoder would not produce.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from tests.support.emulator_app import (
    K8S_LISTENER,
    git_body,
    image_body,
    make_settings,
    running_app,
)

from deployplane.emulator.web.jsonguard import MAX_DEPTH

pytestmark = pytest.mark.postgres

JSON = {"Content-Type": "application/json"}
SURROGATE = "\udc80"
PLACEHOLDER = "@@HOSTILE@@"


def raw(body: Any, *, number: str | None = None) -> bytes:
    """`body` as JSON text (surrogates as \\u escapes); the string PLACEHOLDER, quotes
    and all, replaced by the literal JSON text `number` when given."""
    text = json.dumps(body)
    if number is not None:
        text = text.replace(json.dumps(PLACEHOLDER), number)
    return text.encode()


def nested(depth: int) -> str:
    """JSON text of `depth` nested objects (too deep for json.dumps to write)."""
    return '{"a": ' * depth + '"leaf"' + "}" * depth


async def state(api: httpx.AsyncClient) -> tuple[Any, Any]:
    deployments = await api.get("/v2/deployments", params={"limit": 100})
    listeners = await api.get("/v2/listeners", params={"limit": 100})
    assert deployments.status_code == 200, deployments.text
    assert listeners.status_code == 200, listeners.text
    return deployments.json(), listeners.json()


def with_spec(**spec: Any) -> dict[str, Any]:
    body = image_body("hostile")
    body["source_config"]["resource_spec"] = spec
    return body


def with_config(**config: Any) -> dict[str, Any]:
    body = image_body("hostile")
    body["source_config"].update(config)
    return body


SURROGATE_DEPLOYMENTS = [
    (with_config(custom_url=f"https://x{SURROGATE}"), ["source_config", "custom_url"]),
    (with_spec(labels={"team": SURROGATE}), ["source_config", "resource_spec", "labels", "team"]),
    (
        with_spec(service_account_name=SURROGATE),
        ["source_config", "resource_spec", "service_account_name"],
    ),
    (
        with_config(listener_config={"k8s_namespace": SURROGATE}),
        ["source_config", "listener_config", "k8s_namespace"],
    ),
    (
        {**image_body("hostile"), "source_revision_config": {"image_uri": f"r/a:{SURROGATE}"}},
        ["source_revision_config", "image_uri"],
    ),
    (
        {**git_body("hostile"), "source_revision_config": {"repo_ref": SURROGATE}},
        ["source_revision_config", "repo_ref"],
    ),
    (
        {**image_body("hostile"), "secrets": [{"name": "K", "value": f"sk-hidden{SURROGATE}"}]},
        ["secrets", 0, "value"],
    ),
    ({**image_body("hostile"), "name": f"n{SURROGATE}"}, ["name"]),
    # a key cannot be named in `loc` (it is not text): its object is
    (with_spec(labels={f"k{SURROGATE}": "v"}), ["source_config", "resource_spec", "labels"]),
]


@pytest.mark.parametrize(("body", "loc"), SURROGATE_DEPLOYMENTS)
async def test_lone_surrogates_are_refused_before_anything_is_written(
    database_url: str, body: dict[str, Any], loc: list[Any]
) -> None:
    settings = make_settings(database_url, step_seconds=3600)
    async with running_app(settings) as (_, api):
        before = await state(api)
        refused = await api.post("/v2/deployments", content=raw(body), headers=JSON)
        assert refused.status_code == 422, refused.text
        assert refused.json()["detail"][0]["loc"] == ["body", *loc]
        assert "sk-hidden" not in refused.text
        assert await state(api) == before
    async with running_app(settings) as (_, api):  # and after a restart
        assert await state(api) == before


async def test_a_surrogate_in_a_patch_or_a_listener_is_refused(database_url: str) -> None:
    async with running_app(make_settings(database_url, step_seconds=3600)) as (_, api):
        created = (await api.post("/v2/deployments", json=image_body())).json()
        path = f"/v2/deployments/{created['id']}"
        patch = {"source_config": {"custom_url": f"https://{SURROGATE}"}}
        refused = await api.patch(path, content=raw(patch), headers=JSON)
        assert refused.status_code == 422
        assert refused.json()["detail"][0]["loc"] == ["body", "source_config", "custom_url"]
        got = await api.get(path)
        assert got.status_code == 200
        assert got.json() == created

        listener = {**K8S_LISTENER, "compute_config": {"k8s_namespaces": ["ok", SURROGATE]}}
        refused = await api.post("/v2/listeners", content=raw(listener), headers=JSON)
        assert refused.status_code == 422
        assert refused.json()["detail"][0]["loc"] == ["body", "compute_config", "k8s_namespaces", 1]
        good = (await api.post("/v2/listeners", json=K8S_LISTENER)).json()
        lpath = f"/v2/listeners/{good['id']}"
        for method in ("PATCH", "PUT"):
            bad = {**K8S_LISTENER, "version": SURROGATE}
            answer = await api.request(method, lpath, content=raw(bad), headers=JSON)
            assert answer.status_code == 422, (method, answer.text)
            assert answer.json()["detail"][0]["loc"] == ["body", "version"]
        assert (await api.get(lpath)).json() == good
        assert [d["id"] for d in (await state(api))[0]["resources"]] == [created["id"]]


async def test_surrogate_bytes_and_valid_pairs(database_url: str) -> None:
    """UTF-8 bytes of a surrogate are not UTF-8; an escaped pair is one valid character."""
    async with running_app(make_settings(database_url, step_seconds=3600)) as (_, api):
        bad = raw(image_body("bytes")).replace(b'"bytes"', b'"b\xed\xb2\x80"')
        refused = await api.post("/v2/deployments", content=bad, headers=JSON)
        assert refused.status_code == 422
        assert refused.json()["detail"][0]["loc"] == ["body"]
        pair = raw(with_spec(labels={"mood": "\U0001f600"}))
        assert b"\\ud83d\\ude00" in pair
        created = await api.post("/v2/deployments", content=pair, headers=JSON)
        assert created.status_code == 201, created.text
        got = (await api.get(f"/v2/deployments/{created.json()['id']}")).json()
        assert got["source_config"]["resource_spec"]["labels"] == {"mood": "\U0001f600"}


HOSTILE_NUMBERS = {
    "1e400": "1e400",
    "-1e400": "-1e400",
    "Infinity": "Infinity",
    "-Infinity": "-Infinity",
    "NaN": "NaN",
    "5000-digits": "9" * 5000,
    "below-int64": str(-(2**63) - 1),
    "above-int64": str(2**63),
}


@pytest.mark.parametrize("number", list(HOSTILE_NUMBERS.values()), ids=list(HOSTILE_NUMBERS))
async def test_non_finite_and_huge_numbers_are_422(database_url: str, number: str) -> None:
    async with running_app(make_settings(database_url, step_seconds=3600)) as (_, api):
        before = await state(api)
        cases = [
            ("/v2/deployments", with_spec(min_scale=PLACEHOLDER), ["min_scale"]),
            ("/v2/deployments", with_spec(labels={"n": PLACEHOLDER}), ["labels", "n"]),
            (
                "/v2/listeners",
                {**K8S_LISTENER, "compute_config": {"extra": [PLACEHOLDER]}},
                ["compute_config", "extra", 0],
            ),
        ]
        for path, body, loc in cases:
            refused = await api.post(path, content=raw(body, number=number), headers=JSON)
            assert refused.status_code == 422, (path, number, refused.text)
            detail = refused.json()["detail"][0]
            assert detail["loc"][-len(loc) :] == loc
            assert "9" * 30 not in refused.text  # never echoed
        assert await state(api) == before


@pytest.mark.parametrize("text", ["1e400", "-1e400", "Infinity", "NaN"])
async def test_a_number_field_refuses_a_non_finite_string(database_url: str, text: str) -> None:
    # pydantic reads the string "1e400" as a number; it was stored as null (a 201)
    async with running_app(make_settings(database_url, step_seconds=3600)) as (_, api):
        before = await state(api)
        refused = await api.post("/v2/deployments", json=with_spec(min_scale=text))
        assert refused.status_code == 422, refused.text
        assert "min_scale" in refused.json()["detail"][0]["loc"]
        assert await state(api) == before


async def test_numbers_in_range_pass(database_url: str) -> None:
    async with running_app(make_settings(database_url, step_seconds=3600)) as (_, api):
        body = with_spec(min_scale=PLACEHOLDER, labels={"big": 2**63 - 1, "small": -(2**63)})
        created = await api.post(
            "/v2/deployments", content=raw(body, number="1e-400"), headers=JSON
        )
        assert created.status_code == 201, created.text
        spec = created.json()["source_config"]["resource_spec"]
        assert spec["labels"] == {"big": 2**63 - 1, "small": -(2**63)}


@pytest.mark.parametrize("depth", [MAX_DEPTH, 256, 989, 5000])
async def test_deep_nesting_is_422(database_url: str, depth: int) -> None:
    async with running_app(make_settings(database_url, step_seconds=3600)) as (_, api):
        before = await state(api)
        deep_labels = raw(with_spec(labels=PLACEHOLDER), number=nested(depth))
        refused = await api.post("/v2/deployments", content=deep_labels, headers=JSON)
        assert refused.status_code == 422, refused.text
        assert "nested deeper than" in refused.json()["detail"][0]["msg"]
        deep_config = raw({**K8S_LISTENER, "compute_config": PLACEHOLDER}, number=nested(depth))
        refused = await api.post("/v2/listeners", content=deep_config, headers=JSON)
        assert refused.status_code == 422, refused.text
        assert await state(api) == before


async def test_nesting_up_to_the_limit_passes(database_url: str) -> None:
    async with running_app(make_settings(database_url, step_seconds=3600)) as (_, api):
        # body(1) > source_config(2) > resource_spec(3) > labels(4) > ... = MAX_DEPTH
        body = raw(with_spec(labels=PLACEHOLDER), number=nested(MAX_DEPTH - 4))
        created = await api.post("/v2/deployments", content=body, headers=JSON)
        assert created.status_code == 201, created.text
        assert (await api.get(f"/v2/deployments/{created.json()['id']}")).status_code == 200


async def test_an_answer_that_cannot_be_written_leaves_nothing_written(
    database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Writes complete or leave nothing, whatever else fails: the answer is serialised
    inside the transaction, so a failure to write it rolls the write back."""
    # Every write route answers through deps.write_answer, which serialises with this.
    from deployplane.emulator.web import deps

    def unwritable(*_: Any, **__: Any) -> Any:
        raise ValueError("cannot serialise")

    settings = make_settings(database_url, step_seconds=3600)
    async with running_app(settings) as (_, api):
        created = (await api.post("/v2/deployments", json=image_body("kept"))).json()
        kept = (await api.post("/v2/listeners", json=K8S_LISTENER)).json()
        before = await state(api)
        monkeypatch.setattr(deps, "json_response", unwritable)
        attempts = [
            ("POST", "/v2/deployments", image_body("lost")),
            ("PATCH", f"/v2/deployments/{created['id']}", {"source_config": {"custom_url": "u"}}),
            ("POST", "/v2/listeners", {**K8S_LISTENER, "compute_id": "lost"}),
            ("PATCH", f"/v2/listeners/{kept['id']}", {"version": "2"}),
            ("PUT", f"/v2/listeners/{kept['id']}", {**K8S_LISTENER, "version": "3"}),
        ]
        for method, path, body in attempts:
            with pytest.raises(ValueError, match="cannot serialise"):
                await api.request(method, path, json=body)
        monkeypatch.undo()
        assert await state(api) == before


@pytest.mark.parametrize(
    "content_type",
    [None, "application/json; charset=utf-8", "APPLICATION/JSON", "application/x+json"],
)
async def test_every_content_type_parsed_as_json_is_guarded(
    database_url: str, content_type: str | None
) -> None:
    async with running_app(make_settings(database_url, step_seconds=3600)) as (_, api):
        before = await state(api)
        body = raw(with_config(custom_url=SURROGATE))
        headers = {"Content-Type": content_type} if content_type else {}
        refused = await api.post("/v2/deployments", content=body, headers=headers)
        assert refused.status_code == 422
        assert await state(api) == before


@pytest.mark.parametrize(
    "content_type", ["text/plain", "application/octet-stream", "application/jsonx"]
)
async def test_a_body_the_guard_does_not_read_never_reaches_storage(
    database_url: str, content_type: str
) -> None:
    """The guard reads only the bodies the framework parses as JSON; any other body is
    no model either, so U+0000 in it is refused before a route runs (which is why the
    routes need no NUL check of their own)."""
    async with running_app(make_settings(database_url, step_seconds=3600)) as (_, api):
        before = await state(api)
        body = raw(image_body("a\u0000b"))
        refused = await api.post(
            "/v2/deployments", content=body, headers={"Content-Type": content_type}
        )
        assert refused.status_code == 422
        assert await state(api) == before
