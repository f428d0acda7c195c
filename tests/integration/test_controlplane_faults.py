"""Fault injection, request statistics and the body size limit."""
# ruff: noqa: F811  (pytest fixtures imported from the harness are parameters here)

from __future__ import annotations

from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
from _controlplane_harness import (  # noqa: F401  (fixtures are used by name)
    api,
    emulator,
    image_body,
    make_settings,
    running_app,
)


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
        switched = await client.put("/_emulator/faults", json={"error_rate": 0})
        assert switched.json() == {"error_rate": 0.0, "latency_ms": 0.0}
        listed = await client.get("/v2/deployments")
        assert listed.status_code == 200
        assert listed.json()["resources"] == []  # no faulted request was performed


async def test_faults_switch_at_runtime_and_are_validated(api: httpx.AsyncClient) -> None:
    assert (await api.get("/_emulator/faults")).json() == {"error_rate": 0.0, "latency_ms": 0.0}
    on = await api.put("/_emulator/faults", json={"error_rate": 1, "latency_ms": 1})
    assert on.status_code == 200
    assert (await api.get("/v2/deployments")).status_code in {500, 502, 503, 429}
    assert (await api.put("/_emulator/faults", json={"error_rate": 2})).status_code == 422
    assert (await api.put("/_emulator/faults", json={"bogus": 1})).status_code == 422
    off = await api.put("/_emulator/faults", json={"error_rate": 0, "latency_ms": 0})
    assert off.status_code == 200
    assert (await api.get("/v2/deployments")).status_code == 200


async def test_emulator_endpoints_are_not_in_the_openapi_document(api: httpx.AsyncClient) -> None:
    paths = (await api.get("/openapi.json")).json()["paths"]
    assert not [path for path in paths if path.startswith("/_emulator") or path == "/healthz"]


async def test_stats_count_requests_by_route_template_and_status(api: httpx.AsyncClient) -> None:
    created = (await api.post("/v2/deployments", json=image_body())).json()
    await api.get(f"/v2/deployments/{created['id']}")
    await api.get(f"/v2/deployments/{created['id']}")
    await api.post("/v2/deployments", json=image_body())
    stats = (await api.get("/_emulator/stats")).json()
    assert stats["requests"]["POST /v2/deployments"] == {"201": 1, "400": 1}
    assert stats["requests"]["GET /v2/deployments/{deployment_id}"] == {"200": 2}
    assert stats["total"] == 4
    assert (await api.delete("/_emulator/stats")).status_code == 204
    assert (await api.get("/_emulator/stats")).json() == {"total": 0, "requests": {}}


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
