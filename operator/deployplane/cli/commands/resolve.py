"""Names where ids are taken: `deployplane deployments get git-bot`.

Every command that takes a deployment or a listener accepts its id, its name (a
deployment's `name`, a listener's `compute_id`) or `kind/name` as `-o name` prints it.
A UUID is taken as an id without a request. A name is looked up only through what the
service publishes: deployments by `name_contains` and an exact match over every page
(there is no exact-name filter), listeners by paging the listing (no filter at all).
No match or several matches is a `NotResolved` error: one line, exit 1.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import TypeVar
from uuid import UUID

from deployplane.api.client import ControlPlaneClient
from deployplane.api.errors import ControlPlaneError
from deployplane.api.models import Deployment, Listener

__all__ = ["NameNotFound", "NotResolved", "deployment_id", "listener_id", "split_kind"]

T = TypeVar("T")

# Enough to tell "one" from "several" without reading a huge listing to its end.
_ENOUGH = 2


class NotResolved(ControlPlaneError):
    """A name that names no resource, or more than one."""


class NameNotFound(NotResolved):
    """A name that names no resource."""


def split_kind(ref: str, kind: str) -> str:
    """`deployment/git-bot` -> `git-bot`; a reference of another kind is refused."""
    prefix, slash, rest = ref.partition("/")
    if not slash or prefix not in _KIND_ALIASES:
        return ref
    if _KIND_ALIASES[prefix] != kind:
        raise NotResolved(f"{ref!r} is a {_KIND_ALIASES[prefix]}, not a {kind}")
    return rest


_KIND_ALIASES = {
    "deployment": "deployment",
    "deployments": "deployment",
    "listener": "listener",
    "listeners": "listener",
    "revision": "revision",
    "revisions": "revision",
}


def _as_uuid(ref: str) -> str | None:
    try:
        return str(UUID(ref))
    except ValueError:
        return None


async def _matches(items: AsyncIterator[T], name_of: Callable[[T], str], name: str) -> list[T]:
    found: list[T] = []
    async for item in items:
        if name_of(item) == name:
            found.append(item)
            if len(found) >= _ENOUGH:
                break
    return found


def _one(kind: str, name: str, found: list[T], id_of: Callable[[T], object]) -> str:
    if not found:
        raise NameNotFound(f"{kind} {name!r} not found (no {kind} has this name or id)")
    if len(found) > 1:
        ids = ", ".join(str(id_of(item)) for item in found)
        raise NotResolved(f"{kind} name {name!r} is ambiguous (ids {ids}, ...): give the id")
    return str(id_of(found[0]))


async def deployment_id(client: ControlPlaneClient, ref: str) -> str:
    """The id of the deployment `ref` names (an id, a name or deployment/NAME)."""
    name = split_kind(ref, "deployment")
    as_id = _as_uuid(name)
    if as_id is not None:
        return as_id
    found = await _matches(client.iter_deployments(name_contains=name), lambda d: d.name, name)

    def id_of(deployment: Deployment) -> object:
        return deployment.id

    return _one("deployment", name, found, id_of)


async def listener_id(client: ControlPlaneClient, ref: str) -> str:
    """The id of the listener `ref` names (an id, a compute_id or listener/COMPUTE_ID)."""
    name = split_kind(ref, "listener")
    as_id = _as_uuid(name)
    if as_id is not None:
        return as_id
    found = await _matches(client.iter_listeners(), lambda x: x.compute_id, name)

    def id_of(listener: Listener) -> object:
        return listener.id

    return _one("listener", name, found, id_of)
