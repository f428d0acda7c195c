"""The yardstick for `converge_ratio`: what the operator does, without Kubernetes.

A plain asyncio script on `ControlPlaneClient` creates the same deployments the
benchmark applies as custom resources, polls each latest revision until it is terminal
on the operator's own poll schedule, then reads the deployment once (the operator's
call budget: POST, GET revision while in progress, one GET deployment when terminal).

Requests in flight are capped at the client's connection pool size: a thousand
coroutines queued on one httpx pool cost more CPU in the pool's bookkeeping than in the
requests themselves, and the yardstick should be a competent script, not a slow one.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence

from deployplane.api.client import ControlPlaneClient
from deployplane.api.models import DeploymentCreate


def deployment_body(name: str) -> DeploymentCreate:
    return DeploymentCreate.model_validate(
        {
            "name": name,
            "source": "external_docker",
            "source_config": {"resource_spec": {"min_scale": 1}},
            "source_revision_config": {"image_uri": "registry.example.com/agent:1"},
        }
    )


async def converge_directly(
    url: str,
    names: Sequence[str],
    *,
    api_key: str,
    tenant_id: str,
    poll_interval: float,
    poll_max: float,
    max_in_flight: int = 100,
) -> float:
    """Seconds to create every deployment and see each latest revision terminal."""
    in_flight = asyncio.Semaphore(max_in_flight)

    async with ControlPlaneClient(url, api_key=api_key, tenant_id=tenant_id) as client:

        async def one(name: str) -> None:
            async with in_flight:
                created = await client.create_deployment(deployment_body(name))
            assert created.latest_revision_id is not None
            revision = created.latest_revision_id
            delay = poll_interval  # the operator, too, polls after a wait
            while True:
                await asyncio.sleep(delay)
                async with in_flight:
                    polled = await client.get_revision(created.id, revision)
                if polled.status.is_terminal:
                    break
                delay = min(poll_max, delay * 1.5)
            async with in_flight:
                await client.get_deployment(created.id)

        began = time.monotonic()
        await asyncio.gather(*(one(name) for name in names))
        return time.monotonic() - began
