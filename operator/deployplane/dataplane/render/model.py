"""What a render produces: `Rendered`, `RenderError`, and filling in the owner's uid."""

from __future__ import annotations

import copy
import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from deployplane.api.dataplane import ServerRuntime

Obj = dict[str, Any]

# Filled in by `with_owner`; an empty uid is refused by the apiserver, so an object
# applied without it fails loudly instead of being orphaned.
OWNER_UID_PLACEHOLDER = ""


@dataclass(frozen=True)
class RenderWarning:
    """`reason`: an Event reason (CamelCase); `message`: one sentence, never a value."""

    reason: str
    message: str


@dataclass(frozen=True)
class Scaled:
    """A Deployment whose replica count is its autoscaler's (an HPA or a ScaledObject
    targets it): rendered without `replicas`, so that no apply of the agent ever sets
    the count back. `initial` is the count its creation starts at (the minimum)."""

    name: str
    initial: int


@dataclass(frozen=True)
class Retired:
    """An autoscaler this render does not make (autoscaling turned off, or the queue's
    moved from an HPA to KEDA): one left behind would go on scaling the Deployment the
    render gives a fixed count, so the agent deletes it when the owner owns it."""

    api_version: str
    kind: str
    name: str


@dataclass(frozen=True)
class Rendered:
    """What the agent applies: `owner` first, then `with_owner(objects, owner_uid)`."""

    namespace: str
    owner: Obj
    objects: list[Obj]
    url: str | None = None  # what the route exposes (None without routing)
    runtime: ServerRuntime = ServerRuntime.POSTGRES  # the server the image runs
    # What the render did otherwise than the spec asks, and why: the agent says each in
    # a Warning Event on the agent-server Deployment and in the deploy logs.
    warnings: tuple[RenderWarning, ...] = ()
    scaled: tuple[Scaled, ...] = ()  # Deployments whose replicas are an autoscaler's
    retired: tuple[Retired, ...] = ()  # autoscalers that must not be left scaling

    def __repr__(self) -> str:
        # Secrets are among the objects: name them, never print them.
        names = ", ".join(f"{o['kind']}/{o['metadata']['name']}" for o in self.objects)
        owner = self.owner["metadata"]["name"]
        return f"Rendered(namespace={self.namespace!r}, owner={owner!r}, objects=[{names}])"

    __str__ = __repr__


OWNER_DIGEST = "render-digest"
"""Key of the owner ConfigMap's data: the digest of what the revision was applied as."""


def render_digest(objects: Sequence[Obj]) -> str:
    """A digest of the rendered objects, kept in the owner beside the revision marker, so
    that the agent re-applies a revision only when what it renders changed (a resource
    change that made no revision) and a re-render of an unchanged one writes nothing.

    Secrets are left out: their values must not be testable from a ConfigMap, and a
    change of them comes with a new revision (docs/emulator.md)."""
    kept = [obj for obj in objects if obj["kind"] != "Secret"]
    text = json.dumps(kept, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:32]


OWNER_OBJECT_DIGESTS = "object-digests"
"""Key of the owner ConfigMap's data: each object's digest (JSON, by `Kind/name`), so
that a render that changed is applied only where it changed."""


def object_key(obj: Obj) -> str:
    return f"{obj['kind']}/{obj['metadata']['name']}"


def object_digests(objects: Sequence[Obj]) -> str:
    """`render_digest` object by object (Secrets left out, for the same reasons)."""
    digests = {
        object_key(obj): hashlib.sha256(
            json.dumps(obj, sort_keys=True, separators=(",", ":")).encode()
        ).hexdigest()[:16]
        for obj in objects
        if obj["kind"] != "Secret"
    }
    return json.dumps(digests, sort_keys=True, separators=(",", ":"))


class RenderError(ValueError):
    """The deployment cannot be rendered; the message is one sentence, never a value."""


def with_owner(objects: Sequence[Obj], owner_uid: str) -> list[Obj]:
    """Copies of `objects` whose owner placeholder carries the owner's uid."""
    if not owner_uid:
        raise ValueError("owner_uid is empty: apply the owner first and pass its metadata.uid")
    result = []
    for obj in objects:
        filled = copy.deepcopy(obj)
        for ref in filled["metadata"].get("ownerReferences", []):
            if ref.get("uid") == OWNER_UID_PLACEHOLDER:
                ref["uid"] = owner_uid
        result.append(filled)
    return result
