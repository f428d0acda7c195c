"""The kinds the others depend on (ControlPlaneConnection, Listener): who uses one, and
when one turning Ready wakes the resources waiting for it (`Workers.dependencies`).

- **In use.** A dependency being deleted keeps our finalizer while a resource uses it
  (Crossplane's ProviderConfigUsage, Kubernetes' in-use protection of a volume claim),
  so that every user can still be finalized through it: a connection while a resource
  of its namespace goes through it, a Listener while an AgentDeployment runs on it (of
  its namespace, or of another it admits). An instance that reconciles every resource
  counts them in its own watch; a label-sharded one sees only its shard's, so it lists
  the users' kinds from the apiserver (`listed_users`, through an `ObjectLister`: a
  paged LIST, and only while a dependency is being deleted, so it costs nothing in
  steady state).
- **Waking.** A dependency turning Ready wakes the resources of its namespace whose last
  pass stalled or is being retried (they may have failed for want of it) instead of
  leaving them to their backoff or resync. The instance that reconciles the dependency
  sees it turn Ready in its own pass; every other instance of a sharded install sees it
  through the watch it keeps for the connections index (`ReadyWatch`), and wakes its
  own resources. Each resource is woken once, by the instance that reconciles it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Protocol

from deployplane.reconcile.conditions import TRUE, ConditionType

UsedBy = Callable[[Mapping[str, Any], Mapping[str, Any]], bool]
"""(body of a dependency, body of a resource of another kind) -> the latter uses it."""

SharedBy = Callable[[Mapping[str, Any]], bool]
"""(body of a dependency) -> resources of other namespaces may use it too."""


@dataclass(frozen=True)
class Dependency:
    """A kind the others depend on: its test of use, and whether one of its objects
    may be used from other namespaces (then its users are looked for everywhere)."""

    used_by: UsedBy
    shared: SharedBy | None = None

    def users_namespace(self, body: Mapping[str, Any]) -> str | None:
        """Where a dependency's users are listed: its namespace, or None (every one)."""
        if self.shared is not None and self.shared(body):
            return None
        return str((body.get("metadata") or {}).get("namespace"))


SHOWN: Final = 3
"""How many users an in-use message names (then: "and more", and the count)."""


class ObjectLister(Protocol):
    def list_objects(self, plural: str, namespace: str | None) -> AsyncIterator[Mapping[str, Any]]:
        """Every object of a kind of ours (in `namespace`), read page by page
        (`deployplane.kube.api.KubernetesApi.list_objects`)."""
        ...


def in_use_message(users: Sequence[str]) -> str:
    """The Warning Event's text: the first users by name, and how many (names only:
    nothing of a spec, let alone a secret)."""
    ordered = sorted(users)
    shown = ", ".join(ordered[:SHOWN]) + (" and more" if len(ordered) > SHOWN else "")
    return f"still used by {shown} ({len(ordered)}); deleted once none is"


async def listed_users(
    lister: ObjectLister,
    plurals: Mapping[str, str],
    dependency: Mapping[str, Any],
    used_by: UsedBy,
    namespace: str | None,
) -> list[str]:
    """The resources (kind/name, or kind/namespace/name for another namespace's) that
    use `dependency`, listed from the apiserver, every shard's: `plurals` maps each kind
    that may use it to its plural; `namespace` is where to list (None: everywhere)."""
    home = (dependency.get("metadata") or {}).get("namespace")
    users = []
    for kind, plural in plurals.items():
        async for body in lister.list_objects(plural, namespace):
            if used_by(dependency, body):
                users.append(user_name(kind, body, home))
    return users


def user_name(kind: str, body: Mapping[str, Any], home: str | None) -> str:
    """How an in-use message names a user: kind/name, with its namespace when it is
    not the dependency's (`home`)."""
    meta = body.get("metadata") or {}
    where = "" if meta.get("namespace") == home else f"{meta.get('namespace')}/"
    return f"{kind.lower()}/{where}{meta.get('name')}"


def is_ready(body: Mapping[str, Any]) -> bool:
    """kstatus's Ready: the Ready condition True, written for the current generation."""
    status = body.get("status") or {}
    generation = (body.get("metadata") or {}).get("generation")
    observed = status.get("observedGeneration")
    if generation is not None and observed is not None and observed != generation:
        return False
    return any(
        c.get("type") == ConditionType.READY and c.get("status") == TRUE
        for c in status.get("conditions") or []
    )


class ReadyWatch:
    """Whether each dependency another instance reconciles was Ready when last seen
    through the watch: a flip to Ready is what wakes this instance's resources."""

    def __init__(self) -> None:
        self._ready: dict[Hashable, bool] = {}

    def turned_ready(self, key: Hashable, body: Mapping[str, Any]) -> bool:
        """Seen again: True if it is Ready now and was seen not Ready before. Never on
        first sight (at start-up nothing waits yet; a new connection is first seen
        without a status)."""
        ready = is_ready(body)
        before = self._ready.get(key)
        self._ready[key] = ready
        return ready and before is False

    def forget(self, key: Hashable) -> None:
        self._ready.pop(key, None)

    def __len__(self) -> int:
        return len(self._ready)
