"""`ConnectionSettings`: the one thing every control-plane client is built from."""

from __future__ import annotations

import httpx

from deployplane.api.client import ControlPlaneClient
from deployplane.api.connection import ConnectionSettings
from deployplane.dataplane.protocol import DataPlaneClient

KEY = "lsv2_sk_settings-secret-123456"


def test_the_api_key_is_never_shown() -> None:
    settings = ConnectionSettings("http://cp.test", KEY, "tenant-1")
    shown = [repr(settings), str(settings), f"{settings}", repr(settings.pool_key)]
    assert [KEY in text for text in shown] == [False] * len(shown)
    assert "api_key=<redacted>" in repr(settings)
    assert "tenant-1" in repr(settings)


def test_pool_key_tells_keys_apart_without_holding_them() -> None:
    one = ConnectionSettings("http://cp.test", KEY, "t")
    assert one.pool_key == ConnectionSettings("http://cp.test", KEY, "t").pool_key
    assert one.pool_key != ConnectionSettings("http://cp.test", "other", "t").pool_key
    assert one.pool_key != ConnectionSettings("http://cp.test", KEY, None).pool_key


async def test_client_sends_key_and_tenant_and_takes_client_options() -> None:
    seen: list[httpx.Request] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(204)

    settings = ConnectionSettings("http://cp.test", KEY, "tenant-1")
    async with settings.client(transport=httpx.MockTransport(answer)) as client:
        assert type(client) is ControlPlaneClient
        await client.delete_listener("l-1")
    assert str(seen[0].url) == "http://cp.test/v2/listeners/l-1"
    assert (seen[0].headers["X-Api-Key"], seen[0].headers["X-Tenant-Id"]) == (KEY, "tenant-1")


async def test_client_without_key_or_tenant_sends_neither() -> None:
    seen: list[httpx.Request] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(204)

    transport = httpx.MockTransport(answer)
    async with ConnectionSettings("http://cp.test").client(transport=transport) as client:
        await client.delete_listener("l-1")
    assert "X-Api-Key" not in seen[0].headers
    assert "X-Tenant-Id" not in seen[0].headers


async def test_client_of_a_subclass_is_that_subclass() -> None:
    async with ConnectionSettings("http://cp.test", KEY).client(DataPlaneClient) as client:
        assert isinstance(client, DataPlaneClient)
        assert KEY not in repr(client)
