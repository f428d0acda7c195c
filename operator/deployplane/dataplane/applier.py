"""Puts a rendered deployment into the cluster, and takes it out again.

Order makes it restart-safe without local state (docs/dataplane.md):
1. the owner ConfigMap, created without the revision marker if it does not exist yet
   (its uid is what every other object's ownerReference needs);
2. every other object, each with an ownerReference to the owner (first deleting the
   autoscalers the render no longer makes; a Deployment whose count is its
   autoscaler's is applied as handover.py says);
3. the owner again, now with `data.revision-id`: the marker that this revision is
   completely applied, and `data.render-digest`, what it was applied as (the digest of
   the rendered objects, Secrets left out: `render.render_digest`), with each object's
   digest beside it (`data.object-digests`).
An agent killed anywhere in between finds an owner without this revision's marker (or
with another digest) and applies again; server-side apply of what is already there
changes nothing. An owner with both equal to a new render is not applied at all
(`is_applied`): a re-render of an unchanged revision writes nothing; one whose digest
differs names the objects that changed (`changed_since`).
"""

from __future__ import annotations

import asyncio
import base64
import json
import secrets
from collections.abc import Collection, Iterable, Mapping
from typing import Any

from deployplane.dataplane.handover import apply_workload, retire
from deployplane.dataplane.kube import Cluster
from deployplane.dataplane.render import (
    LABEL_DEPLOYMENT_ID,
    LABEL_LISTENER_ID,
    OWNER_DIGEST,
    OWNER_OBJECT_DIGESTS,
    Rendered,
    Scaled,
    object_key,
    with_owner,
)

__all__ = [
    "OWNER_MARKER",
    "applied_revision",
    "apply_rendered",
    "changed_since",
    "database_password",
    "find_owners",
    "get_owner",
    "is_applied",
    "owner_selector",
]

OWNER_MARKER = "revision-id"
"""Key of the owner ConfigMap's data naming the revision applied in full."""

Obj = dict[str, Any]


def applied_revision(owner: Mapping[str, Any] | None) -> str | None:
    if owner is None:
        return None
    marker = (owner.get("data") or {}).get(OWNER_MARKER)
    return str(marker) if marker else None


def is_applied(owner: Mapping[str, Any] | None, rendered: Rendered) -> bool:
    """Whether the owner says `rendered` is in the cluster whole: the same revision
    marker and the same render digest."""
    if owner is None:
        return False
    have, want = owner.get("data") or {}, rendered.owner.get("data") or {}
    return all(have.get(key) == want.get(key) for key in _APPLIED_KEYS)


_APPLIED_KEYS = (OWNER_MARKER, OWNER_DIGEST)


def changed_since(owner: Mapping[str, Any], rendered: Rendered) -> set[str]:
    """The objects of `rendered` (by `Kind/name`) the owner does not record as applied
    in this form: every one when it records no object digests (an earlier agent's)."""
    recorded = json.loads((owner.get("data") or {}).get(OWNER_OBJECT_DIGESTS) or "{}")
    now = json.loads(rendered.owner["data"][OWNER_OBJECT_DIGESTS])
    if not recorded:
        return {object_key(obj) for obj in rendered.objects}
    return {key for key, digest in now.items() if recorded.get(key) != digest}


async def get_owner(cluster: Cluster, rendered: Rendered) -> Obj | None:
    meta = rendered.owner["metadata"]
    return await cluster.get("v1", "ConfigMap", meta["namespace"], meta["name"])


async def apply_rendered(
    cluster: Cluster,
    rendered: Rendered,
    owner: Obj | None,
    only: Collection[str] | None = None,
) -> list[Obj]:
    """Applies `rendered` in the restart-safe order above; `owner` is the owner as it is
    in the cluster now (None: absent); `only`: the objects to apply (`Kind/name`), the
    others being as rendered already (`changed_since`). Returns the objects applied as
    the cluster answered, in the order of `rendered.objects`."""
    if owner is None:
        bare = {**rendered.owner, "data": _without_marker(rendered.owner.get("data"))}
        owner = await cluster.apply(bare)
    uid = str(owner["metadata"]["uid"])
    # Before the Deployments get a fixed count again, so that nothing scales them away.
    await retire(cluster, rendered, uid)
    scaled = {s.name: s for s in rendered.scaled}
    # Independent of each other (references between them are by name), so at once.
    objects = [o for o in rendered.objects if only is None or object_key(o) in only]
    applied = await asyncio.gather(
        *(_apply(cluster, obj, scaled) for obj in with_owner(objects, uid))
    )
    await cluster.apply(rendered.owner)
    return list(applied)


async def _apply(cluster: Cluster, obj: Obj, scaled: Mapping[str, Scaled]) -> Obj:
    if obj["kind"] == "Deployment" and obj["metadata"]["name"] in scaled:
        return await apply_workload(cluster, obj, scaled[obj["metadata"]["name"]])
    return await cluster.apply(obj)


def _without_marker(data: Mapping[str, str] | None) -> dict[str, str]:
    return {k: v for k, v in (data or {}).items() if k not in _APPLIED_KEYS}


async def database_password(cluster: Cluster, namespace: str, secret_name: str) -> str:
    """The deployment's PostgreSQL password: the one already in the cluster, else a new
    random one. The cluster is the only place it is kept, so a restarted agent renders
    the same password and never changes the database's."""
    existing = await cluster.get("v1", "Secret", namespace, secret_name)
    encoded = ((existing or {}).get("data") or {}).get("password")
    if encoded:
        return base64.b64decode(encoded).decode()
    return secrets.token_urlsafe(24)


async def find_owners(
    cluster: Cluster, namespaces: Iterable[str], selector: Mapping[str, str]
) -> list[Obj]:
    """Owner ConfigMaps matching `selector` in `namespaces`: those labelled by the
    renderer and owned by nothing (the other objects all have an owner)."""
    found: list[Obj] = []
    for namespace in namespaces:
        for obj in await cluster.list("v1", "ConfigMap", namespace, selector):
            if not obj["metadata"].get("ownerReferences"):
                found.append(obj)
    return found


def owner_selector(*, listener_id: str, deployment_id: str | None = None) -> dict[str, str]:
    selector = {LABEL_LISTENER_ID: listener_id}
    if deployment_id is not None:
        selector[LABEL_DEPLOYMENT_ID] = deployment_id
    return selector
