"""Fault injection, request statistics and the body size limit."""
# ruff: noqa: F811  (pytest fixtures imported from the harness are parameters here)

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.support.emulator_app import (  # noqa: F401  (fixtures are used by name)
    ADMIN,
    ADMIN_KEY,
    KEY_A,
    KEY_B,
    TOKEN_A,
    api,
    config_data,
    emulator,
    image_body,
    make_settings,
    running_app,
    wait_for,
)

from deployplane.emulator.settings import MAX_LATENCY_MS, ConfigError, parse_config
from deployplane.emulator.store.db import Database
from deployplane.emulator.web.middleware import FaultState


async def test_error_rate_one_answers_errors_without_performing(tmp_path: Path) -> None:
    settings = make_settings(tmp_path, faults={"error_rate": 1.0})
    async with running_app(settings) as (_, client):
        statuses: Counter[int] = Counter()
        for index in range(40):
            response = await client.post("/v2/deployments", json=image_body(f"f{index}"))
            statuses[response.status_code] += 1
            if response.status_code == 429:
                assert response.headers["retry-after"] == "1"
        assert set(statuses) <= {500, 502, 503, 429}
        assert len(statuses) > 1  # a mix, not one code
        assert (await client.get("/healthz")).status_code == 200  # never faulted
        assert (await client.get("/readyz")).status_code == 200
        switched = await client.put("/_emulator/faults", json={"error_rate": 0}, headers=ADMIN)
        assert switched.json() == {"error_rate": 0.0, "latency_ms": 0.0}
        listed = await client.get("/v2/deployments")
        assert listed.status_code == 200
        assert listed.json()["resources"] == []  # no faulted request was performed


async def test_faults_switch_at_runtime_and_are_validated(api: httpx.AsyncClient) -> None:
    assert (await api.get("/_emulator/faults", headers=ADMIN)).json() == {
        "error_rate": 0.0,
        "latency_ms": 0.0,
    }
    on = await api.put("/_emulator/faults", json={"error_rate": 1, "latency_ms": 1}, headers=ADMIN)
    assert on.status_code == 200
    assert (await api.get("/v2/deployments")).status_code in {500, 502, 503, 429}
    assert (
        await api.put("/_emulator/faults", json={"error_rate": 2}, headers=ADMIN)
    ).status_code == 422
    assert (await api.put("/_emulator/faults", json={"bogus": 1}, headers=ADMIN)).status_code == 422
    off = await api.put("/_emulator/faults", json={"error_rate": 0, "latency_ms": 0}, headers=ADMIN)
    assert off.status_code == 200
    assert (await api.get("/v2/deployments")).status_code == 200


async def test_emulator_endpoints_are_not_in_the_openapi_document(api: httpx.AsyncClient) -> None:
    paths = (await api.get("/openapi.json")).json()["paths"]
    assert not [p for p in paths if p.startswith("/_emulator") or p in ("/healthz", "/readyz")]


async def test_stats_count_requests_by_route_template_and_status(api: httpx.AsyncClient) -> None:
    created = (await api.post("/v2/deployments", json=image_body())).json()
    await api.get(f"/v2/deployments/{created['id']}")
    await api.get(f"/v2/deployments/{created['id']}")
    await api.post("/v2/deployments", json=image_body())
    stats = (await api.get("/_emulator/stats", headers=ADMIN)).json()
    assert stats["requests"]["POST /v2/deployments"] == {"201": 1, "400": 1}
    assert stats["requests"]["GET /v2/deployments/{deployment_id}"] == {"200": 2}
    assert stats["total"] == 4
    assert (await api.delete("/_emulator/stats", headers=ADMIN)).status_code == 204
    assert (await api.get("/_emulator/stats", headers=ADMIN)).json() == {
        "total": 0,
        "requests": {},
        "in_delay": 0,
    }


async def test_bodies_over_one_mebibyte_are_413(api: httpx.AsyncClient) -> None:
    body = image_body()
    body["source_config"]["resource_spec"]["labels"] = {"blob": "x" * (1024 * 1024)}
    response = await api.post("/v2/deployments", json=body)
    assert response.status_code == 413

    async def chunks() -> AsyncIterator[bytes]:  # no Content-Length: counted as it streams
        for _ in range(20):
            yield b" " * 65536

    streamed = await api.post(
        "/v2/deployments", content=chunks(), headers={"Content-Type": "application/json"}
    )
    assert streamed.status_code == 413
    assert (await api.post("/v2/deployments", json=image_body())).status_code == 201


ADMIN_ROUTES = [
    ("GET", "/_emulator/faults", None),
    ("PUT", "/_emulator/faults", {"error_rate": 0}),
    ("GET", "/_emulator/stats", None),
    ("DELETE", "/_emulator/stats", None),
]


@pytest.mark.parametrize(("method", "path", "body"), ADMIN_ROUTES)
async def test_emulator_endpoints_need_the_admin_key_not_a_tenants(
    api: httpx.AsyncClient, method: str, path: str, body: Any
) -> None:
    """They act for every tenant at once: no workspace credential opens them."""
    for headers in ({}, {"X-Admin-Key": KEY_A}, {"X-Admin-Key": "wrong"}):
        refused = await api.request(method, path, json=body, headers=headers)
        assert refused.status_code == 401, (headers, refused.text)
    bearer = {"X-Api-Key": "", "Authorization": f"Bearer {TOKEN_A}"}
    assert (await api.request(method, path, json=body, headers=bearer)).status_code == 401
    allowed = await api.request(method, path, json=body, headers=ADMIN)
    assert allowed.status_code in {200, 204}, allowed.text
    # and the admin key is no tenant credential
    assert (await api.get("/v2/deployments", headers={"X-Api-Key": ADMIN_KEY})).status_code == 401


async def test_strict_mode_does_not_serve_the_emulator_endpoints(tmp_path: Path) -> None:
    async with running_app(make_settings(tmp_path, strict=True)) as (_, client):
        for method, path, body in ADMIN_ROUTES:
            response = await client.request(method, path, json=body, headers=ADMIN)
            assert response.status_code == 404, (method, path)
        assert (await client.get("/v2/deployments")).status_code == 200


@pytest.mark.parametrize(
    "body",
    [
        b'{"latency_ms": 1e12}',
        b'{"latency_ms": 10001}',
        b'{"latency_ms": Infinity}',
        b'{"latency_ms": NaN}',
        b'{"latency_ms": -1}',
        b'{"error_rate": NaN}',
        b'{"error_rate": 1.5}',
    ],
)
async def test_fault_values_are_bounded(api: httpx.AsyncClient, body: bytes) -> None:
    json_headers = {**ADMIN, "Content-Type": "application/json"}
    refused = await api.put("/_emulator/faults", content=body, headers=json_headers)
    assert refused.status_code == 422, refused.text
    current = await api.get("/_emulator/faults", headers=ADMIN)
    assert current.json() == {"error_rate": 0.0, "latency_ms": 0.0}


async def test_the_largest_latency_is_accepted(api: httpx.AsyncClient) -> None:
    answer = await api.put("/_emulator/faults", json={"latency_ms": MAX_LATENCY_MS}, headers=ADMIN)
    assert answer.status_code == 200
    assert answer.json()["latency_ms"] == MAX_LATENCY_MS


@pytest.mark.parametrize(
    ("faults", "where"),
    [
        ({"latency_ms": 1e12}, "faults.latency_ms"),
        ({"latency_ms": float("inf")}, "faults.latency_ms"),
        ({"error_rate": float("nan")}, "faults.error_rate"),
    ],
)
def test_config_fault_values_are_bounded(faults: dict[str, float], where: str) -> None:
    with pytest.raises(ConfigError, match=where):
        parse_config(config_data(faults=faults))


def test_an_admin_key_may_not_be_a_workspace_credential() -> None:
    with pytest.raises(ConfigError, match="admin_api_keys") as raised:
        parse_config(config_data(admin_api_keys=[KEY_B]))
    assert KEY_B not in str(raised.value)


async def test_stopping_ends_injected_delays(tmp_path: Path) -> None:
    """A shutdown waits for the requests in flight: their injected delay must end at
    once (the CLI stops the faults first; see test_controlplane_cli for SIGTERM)."""
    settings = make_settings(tmp_path, faults={"latency_ms": MAX_LATENCY_MS})
    async with running_app(settings) as (app, client):
        faults: FaultState = app.state.faults
        in_flight = asyncio.create_task(client.get("/v2/deployments"))

        async def in_delay() -> bool:
            stats = await client.get("/_emulator/stats", headers=ADMIN)
            return bool(stats.json()["in_delay"] == 1)

        await wait_for(in_delay)
        faults.stop()
        # bounds a hang only: the delay left was ~10 s
        answer = await asyncio.wait_for(in_flight, timeout=MAX_LATENCY_MS / 2000)
        assert answer.status_code == 200


async def test_a_database_away_makes_the_emulator_unready_not_dead(tmp_path: Path) -> None:
    """Readiness asks the database; liveness only the server: an emulator whose
    database is away leaves its Service's endpoints instead of being restarted."""
    async with running_app(make_settings(tmp_path)) as (app, client):
        assert (await client.get("/readyz")).status_code == 200
        kept = app.state.db
        broken = tmp_path / "broken.db"
        broken.write_bytes(b"not a database file " * 100)
        app.state.db = Database(f"sqlite+aiosqlite:///{broken}")
        try:
            unready = await client.get("/readyz")
            assert unready.status_code == 503
            assert unready.json()["status"] == "unready"
            assert "file is not a database" in unready.json()["database"]
            assert (await client.get("/healthz")).status_code == 200
        finally:
            await app.state.db.dispose()
            app.state.db = kept
        assert (await client.get("/readyz")).status_code == 200
