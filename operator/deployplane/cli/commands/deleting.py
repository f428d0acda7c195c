"""`deployments delete ID...`: one DELETE per id, or the bulk operation for several."""

from __future__ import annotations

from collections.abc import Sequence

from deployplane.api import errors
from deployplane.api.client import MAX_BULK_DELETE, ControlPlaneClient

__all__ = ["delete_many"]


async def delete_many(
    client: ControlPlaneClient, deployment_ids: Sequence[str], delete_tracing_project: bool
) -> dict[str, str]:
    """Deletes them all; returns {id: why} for each one that could not be deleted.

    Several ids go through the bulk operation, 100 per call (its 207 answer names each
    failure); `delete_tracing_project` is an option of the single DELETE only, so with
    it the ids are deleted one by one.
    """
    failed: dict[str, str] = {}
    if len(deployment_ids) == 1 or delete_tracing_project:
        for deployment_id in deployment_ids:
            try:
                await client.delete_deployment(
                    deployment_id, delete_tracing_project=delete_tracing_project
                )
            except errors.NotFound as exc:
                failed[deployment_id] = exc.detail or str(exc)
        return failed
    for start in range(0, len(deployment_ids), MAX_BULK_DELETE):
        chunk = list(deployment_ids[start : start + MAX_BULK_DELETE])
        try:
            result = await client.delete_deployments(chunk)
        except errors.NotFound as exc:  # none of this chunk exists
            failed.update(dict.fromkeys(chunk, exc.detail or str(exc)))
            continue
        for outcome in result.results:
            if outcome.status >= 300:
                failed[str(outcome.deployment_id)] = outcome.detail or f"HTTP {outcome.status}"
    return failed
