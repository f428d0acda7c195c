"""Removing what the agent applied: one deleted deployment's objects, and on a full
round the objects of this listener's deployments that no longer exist.

Only owners (the ConfigMap each render is owned by) are deleted: the garbage collector
removes the rest, foreground, so the owner goes last.
"""

from __future__ import annotations

import logging
from uuid import UUID

from deployplane.api.models import Deployment, Listener
from deployplane.dataplane.applier import find_owners, owner_selector
from deployplane.dataplane.kube import Cluster
from deployplane.dataplane.protocol import DataPlaneClient
from deployplane.dataplane.render import LABEL_DEPLOYMENT_ID
from deployplane.dataplane.work import listener_namespaces

__all__ = ["remove", "sweep_orphans"]

log = logging.getLogger(__name__)


async def remove(
    cluster: Cluster,
    client: DataPlaneClient,
    listener_id: UUID,
    listener: Listener,
    deployment: Deployment,
) -> None:
    """Deletes the deployment's owner and says so once nothing is left."""
    selector = owner_selector(listener_id=str(listener_id), deployment_id=str(deployment.id))
    owners = await find_owners(cluster, listener_namespaces(listener), selector)
    for owner in owners:
        if not owner["metadata"].get("deletionTimestamp"):
            meta = owner["metadata"]
            await cluster.delete("v1", "ConfigMap", meta["namespace"], meta["name"])
    if not owners:
        await client.deletion_done(listener_id, deployment.id)


async def sweep_orphans(
    cluster: Cluster, listener_id: UUID, listener: Listener, known: set[str]
) -> None:
    """Removes the objects of this listener's deployments that no longer exist."""
    selector = owner_selector(listener_id=str(listener_id))
    for owner in await find_owners(cluster, listener_namespaces(listener), selector):
        meta = owner["metadata"]
        if meta["labels"].get(LABEL_DEPLOYMENT_ID) in known or meta.get("deletionTimestamp"):
            continue
        log.info("removing the objects of deleted deployment %s", meta["labels"])
        await cluster.delete("v1", "ConfigMap", meta["namespace"], meta["name"])
