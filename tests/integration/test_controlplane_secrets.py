"""Secret digests are keyed by a server-side key kept outside the rows they protect: a
copy of the rows alone cannot test a guess of a value."""

from __future__ import annotations

import hashlib
import hmac
import os
import stat
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import select
from tests.support.emulator_app import image_body, make_settings, running_app

from deployplane.emulator.store.db import KEY_FILE_SUFFIX
from deployplane.emulator.store.tables import deployments, emulator_keys

pytestmark = pytest.mark.postgres

SECRET = {"name": "OPENAI_API_KEY", "value": "sk-weak"}


def digest_keyed_by_id(deployment_id: str, name: str, value: str) -> str:
    """What anyone can compute: an HMAC keyed by the (public) deployment id alone."""
    message = f"{name}\0{value}".encode()
    return hmac.new(uuid.UUID(deployment_id).bytes, message, hashlib.sha256).hexdigest()


async def stored_secrets(app: FastAPI, deployment_id: str) -> list[dict[str, str]]:
    async with app.state.db.read() as conn:
        row = (
            await conn.execute(
                select(deployments.c.secrets).where(deployments.c.id == uuid.UUID(deployment_id))
            )
        ).one()
    secrets: list[dict[str, str]] = row.secrets
    return secrets


async def create(api: httpx.AsyncClient) -> dict[str, Any]:
    body = {**image_body("keyed"), "secrets": [SECRET]}
    created = await api.post("/v2/deployments", json=body)
    assert created.status_code == 201, created.text
    result: dict[str, Any] = created.json()
    return result


async def test_a_guess_cannot_be_tested_from_the_rows_alone(database_url: str) -> None:
    async with running_app(make_settings(database_url, step_seconds=3600)) as (app, api):
        created = await create(api)
        [record] = await stored_secrets(app, created["id"])
        guess = digest_keyed_by_id(created["id"], SECRET["name"], SECRET["value"])
        assert record["name"] == SECRET["name"]
        assert guess not in record["digest"]  # the id is public
        assert record["digest"].startswith("v2:")
        assert SECRET["value"] not in str(record)


async def test_the_generated_key_is_kept_outside_the_rows_and_survives_a_restart(
    database_url: str, tmp_path: Path
) -> None:
    settings = make_settings(database_url, step_seconds=3600)
    async with running_app(settings) as (app, api):
        created = await create(api)
        key = app.state.db._secret_key
        if database_url.startswith("sqlite"):
            key_file = tmp_path / f"controlplane.db{KEY_FILE_SUFFIX}"
            assert stat.S_IMODE(os.stat(key_file).st_mode) == 0o600
            assert bytes.fromhex(key_file.read_text().strip()) == key
            assert key.hex().encode() not in (tmp_path / "controlplane.db").read_bytes()
        else:
            async with app.state.db.read() as conn:
                stored = (await conn.execute(select(emulator_keys.c.value))).scalar_one()
            assert bytes.fromhex(stored) == key
    async with running_app(settings) as (app, api):
        assert app.state.db._secret_key == key
        path = f"/v2/deployments/{created['id']}"
        same = await api.patch(path, json={"secrets": [SECRET]})
        assert same.status_code == 200
        assert same.json()["latest_revision_id"] == created["latest_revision_id"]


async def test_a_configured_key_keys_the_digests(database_url: str) -> None:
    configured = "k" * 40
    settings = make_settings(database_url, step_seconds=3600, secret_digest_key=configured)
    async with running_app(settings) as (app, api):
        created = await create(api)
        [record] = await stored_secrets(app, created["id"])
    key = hashlib.sha256(configured.encode()).digest()
    message = uuid.UUID(created["id"]).bytes + f"{SECRET['name']}\0{SECRET['value']}".encode()
    assert record["digest"] == "v2:" + hmac.new(key, message, hashlib.sha256).hexdigest()


async def test_patches_tell_changed_values_by_the_keyed_digest(database_url: str) -> None:
    async with running_app(make_settings(database_url, step_seconds=3600)) as (_, api):
        created = await create(api)
        path = f"/v2/deployments/{created['id']}"
        revision = created["latest_revision_id"]
        for secrets, new in (
            ([SECRET], False),
            ([{**SECRET, "value": "sk-changed"}], True),
            ([{**SECRET, "value": "sk-changed"}, {"name": "B", "value": "b"}], True),
            ([{"name": "B", "value": "b"}, {**SECRET, "value": "sk-changed"}], False),
            ([], True),
        ):
            patched = (await api.patch(path, json={"secrets": secrets})).json()
            assert (patched["latest_revision_id"] != revision) is new, secrets
            revision = patched["latest_revision_id"]


def test_a_short_configured_key_is_refused() -> None:
    from tests.support.emulator_app import config_data

    from deployplane.emulator.settings import ConfigError, parse_config

    with pytest.raises(ConfigError, match="secret_digest_key"):
        parse_config(config_data(secret_digest_key="short"))


async def test_a_damaged_key_file_is_a_clear_error_not_a_weak_key(tmp_path: Path) -> None:
    settings = make_settings(tmp_path, step_seconds=3600)
    key_file = tmp_path / f"controlplane.db{KEY_FILE_SUFFIX}"
    key_file.write_text("")  # e.g. truncated by hand
    with pytest.raises(RuntimeError, match="does not hold a 64-digit hex key"):
        async with running_app(settings):
            pass
    key_file.unlink()
    async with running_app(settings) as (app, _):
        assert len(app.state.db._secret_key) == 32
    assert [name for name in os.listdir(tmp_path) if name.endswith(".tmp")] == []


async def test_secret_values_kept_for_the_data_plane_are_encrypted_at_rest(
    database_url: str,
) -> None:
    """The data plane needs the values, so they are kept, but a copy of the database
    alone holds neither them nor a digest of them (sealed under the server-side key)."""
    from deployplane.emulator.store.secretvalues import unseal
    from deployplane.emulator.store.tables import secret_values

    async with running_app(make_settings(database_url, step_seconds=3600)) as (app, api):
        created = await create(api)
        deployment_id = uuid.UUID(created["id"])
        async with app.state.db.read() as conn:
            row = (
                await conn.execute(
                    select(secret_values.c["values"]).where(
                        secret_values.c.deployment_id == deployment_id
                    )
                )
            ).one()
            stored = dict(row[0])
            assert SECRET["value"] not in str(stored)
            assert SECRET["name"] not in str(stored)
            assert unseal(conn.secret_key, deployment_id, stored) == {
                SECRET["name"]: SECRET["value"]
            }
