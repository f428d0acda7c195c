"""The typed ControlPlaneClient against the emulator, in-process: the two sides of
the contract agree on paths, bodies, errors and retries."""

from __future__ import annotations

import uuid
from pathlib import Path

import httpx
import pytest
from tests.support.emulator_app import INTEGRATION_A, KEY_A, KEY_B, make_settings, running_app

from deployplane.api.client import ControlPlaneClient
from deployplane.api.errors import Invalid, NotFound, Unauthorized
from deployplane.api.models import (
    DeploymentCreate,
    DeploymentPatch,
    ListenerCreate,
    ListenerPatch,
    RevisionStatus,
    Secret,
    Source,
    SourceRevisionConfig,
)
from deployplane.emulator.store.answers import SECRET_VALUE_MASK


async def _no_wait(_: float) -> None:
    return None


def image_create(name: str = "client-app", image: str = "r/app:1") -> DeploymentCreate:
    return DeploymentCreate(
        name=name,
        source=Source.EXTERNAL_DOCKER,
        source_revision_config=SourceRevisionConfig(image_uri=image),
        secrets=[Secret(name="TOKEN", value="client-secret")],
    )


@pytest.mark.postgres  # the typed client's whole life cycle, on both databases
async def test_client_deploys_updates_and_deletes(database_url: str) -> None:
    async with running_app(make_settings(database_url, step_seconds=0)) as (app, _):
        transport = httpx.ASGITransport(app=app)
        async with ControlPlaneClient(
            "http://emulator", api_key=KEY_A, transport=transport
        ) as client:
            created = await client.create_deployment(image_create())
            assert created.latest_revision_id is not None
            # the answer's secret holds the mask as its value; the client reads the
            # name alone, so nothing downstream can take the mask for a value
            assert created.secrets is not None
            assert [s.model_dump() for s in created.secrets] == [{"name": "TOKEN"}]
            assert SECRET_VALUE_MASK not in created.model_dump_json()
            revision = await client.wait_for_revision(
                created.id, created.latest_revision_id, poll_interval=0.01, timeout=30
            )
            assert revision.status is RevisionStatus.DEPLOYED
            adopted = await client.find_deployment_by_name("client-app")
            assert adopted is not None
            assert adopted.id == created.id
            updated = await client.update_deployment(
                created.id,
                DeploymentPatch(source_revision_config=SourceRevisionConfig(image_uri="r/app:2")),
            )
            assert updated.latest_revision_id != created.latest_revision_id
            revisions = [r async for r in client.iter_revisions(created.id, page_size=1)]
            assert len(revisions) == 2
            with pytest.raises(Invalid) as refused:  # published: 400, not 409
                await client.create_deployment(image_create())
            assert refused.value.status_code == 400
            await client.delete_deployment(created.id)


async def test_client_maps_errors(tmp_path: Path) -> None:
    async with running_app(make_settings(tmp_path, step_seconds=3600)) as (app, _):
        transport = httpx.ASGITransport(app=app)
        async with ControlPlaneClient(
            "http://emulator", api_key=KEY_A, transport=transport, sleep=_no_wait
        ) as client:
            with pytest.raises(NotFound):
                await client.get_deployment(uuid.uuid4())
            with pytest.raises(Invalid) as invalid:
                await client.create_deployment(DeploymentCreate(name="g", source=Source.GIT_HOST))
            locs = {tuple(e.loc) for e in invalid.value.errors}
            assert ("body", "source_config", "repo_url") in locs
            repos = await client.list_repositories(INTEGRATION_A)
            assert repos[0].default_branch == "main"
            provider = await client.get_oauth_provider("prov-1")
            assert provider.uses_pkce is True
            listener = await client.create_listener(
                ListenerCreate(compute_type="k8s", compute_id="c1", compute_config={})
            )
            patched = await client.update_listener(listener.id, ListenerPatch(version="2"))
            assert patched.version == "2"
            await client.delete_listener(listener.id)
        async with ControlPlaneClient(
            "http://emulator", api_key="nope", transport=transport
        ) as stranger:
            with pytest.raises(Unauthorized):
                await stranger.list_deployments()
        async with ControlPlaneClient(
            "http://emulator", api_key=KEY_B, transport=transport
        ) as other:
            assert (await other.list_deployments()).resources == []


async def test_client_reads_retry_through_injected_faults(tmp_path: Path) -> None:
    async with running_app(make_settings(tmp_path, step_seconds=3600)) as (app, _):
        transport = httpx.ASGITransport(app=app)
        async with ControlPlaneClient(
            "http://emulator", api_key=KEY_A, transport=transport, sleep=_no_wait, max_retries=10
        ) as client:
            created = [
                await client.create_listener(
                    ListenerCreate(compute_type="k8s", compute_id=f"c{index}", compute_config={})
                )
                for index in range(10)
            ]
            # POSTs that may have been performed are not retried by the client, so the
            # faults go on for the reads only
            app.state.faults.error_rate = 0.5
            app.state.faults.rng.seed(7)  # a deterministic fault sequence
            listed = [item async for item in client.iter_listeners(page_size=3)]
            for listener in created:
                assert (await client.get_listener(listener.id)).id == listener.id
        assert {item.id for item in listed} == {item.id for item in created}
        stats = app.state.stats.as_json()["requests"]
        faulted = sum(
            count
            for codes in stats.values()
            for code, count in codes.items()
            if code in {"500", "502", "503", "429"}
        )
        assert faulted > 0
