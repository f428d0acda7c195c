"""Schema-driven fuzzing of the emulator: no generated request gets a 5xx.

schemathesis generates cases from /openapi.json; they are sent through the test's own
httpx client on the test's event loop (the app's lock, worker and connections live on
that loop), while hypothesis drives generation from a worker thread. Bounded (a few
examples per operation) to stay well under a minute.
"""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from schemathesis.core.result import Ok
from tests.support.emulator_app import KEY_A, make_settings, running_app

MAX_EXAMPLES = 20


def _fuzz(
    schema_doc: dict[str, Any], client: httpx.AsyncClient, loop: asyncio.AbstractEventLoop
) -> tuple[int, list[str]]:
    """Runs every operation; returns how many requests were sent and the 5xx seen."""
    schema = schemathesis.openapi.from_dict(schema_doc)  # OpenAPI 3.1, as FastAPI writes it
    failures: list[str] = []
    sent = 0

    def send(kwargs: dict[str, Any]) -> httpx.Response:
        request: dict[str, Any] = {
            "method": kwargs["method"],
            "url": kwargs["url"],
            "headers": {**kwargs.get("headers", {}), "X-Api-Key": KEY_A},
            "params": kwargs.get("params"),
        }
        request["headers"].pop("X-Tenant-Id", None)
        request["headers"].pop("Authorization", None)
        if "json" in kwargs:
            request["json"] = kwargs["json"]
        elif kwargs.get("data") is not None:
            request["content"] = kwargs["data"]
        future = asyncio.run_coroutine_threadsafe(client.request(**request), loop)
        return future.result(timeout=30)

    for result in schema.get_all_operations():
        if not isinstance(result, Ok):  # the document itself is broken
            raise AssertionError(f"unusable operation in /openapi.json: {result.err()}")
        operation = result.ok()

        @settings(
            max_examples=MAX_EXAMPLES,
            deadline=None,
            phases=[Phase.explicit, Phase.generate],
            suppress_health_check=list(HealthCheck),
            database=None,
        )
        @given(case=operation.as_strategy())
        def check(case: Any) -> None:
            nonlocal sent
            response = send(case.as_transport_kwargs(base_url="http://emulator"))
            sent += 1
            if response.status_code >= 500:
                failures.append(f"{case.method} {case.formatted_path} -> {response.status_code}")

        check()
    return sent, failures


@pytest.mark.timeout(120)
@pytest.mark.postgres  # generated text reaches the database: PostgreSQL refuses some SQLite keeps
async def test_no_generated_request_gets_a_5xx(database_url: str) -> None:
    async with running_app(make_settings(database_url, step_seconds=0.01)) as (_, client):
        created = await client.post(
            "/v2/deployments",
            json={
                "name": "seed",
                "source": "external_docker",
                "source_revision_config": {"image_uri": "r/app:1"},
            },
        )
        assert created.status_code == 201
        schema_doc = (await client.get("/openapi.json")).json()
        loop = asyncio.get_running_loop()
        sent, failures = await asyncio.to_thread(_fuzz, schema_doc, client, loop)
    assert failures == []
    assert sent >= 13 * 5  # every operation was exercised
