"""The contract between the generic reconciler and one kind of external resource."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Generic, Protocol, TypeVar

from pydantic import BaseModel

SpecT = TypeVar("SpecT", bound=BaseModel)


@dataclass(frozen=True)
class Managed(Generic[SpecT]):
    """A snapshot of one custom resource, as the reconciler sees it."""

    namespace: str
    name: str
    uid: str
    generation: int
    spec: SpecT
    status: Mapping[str, Any] = field(default_factory=dict)
    resource_version: str | None = None

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


class Phase(Enum):
    """Where the external resource stands, as far as readiness goes."""

    READY = "Ready"
    PROGRESSING = "Progressing"
    FAILED = "Failed"


@dataclass(frozen=True)
class Observation:
    """What observe() saw. `status` holds the kind's own status fields (camelCase)."""

    exists: bool
    up_to_date: bool = True
    status: Mapping[str, Any] = field(default_factory=dict)
    phase: Phase = Phase.READY
    reason: str = ""
    message: str = ""
    # Which fields differ (for events and logs); never values, which may be secret.
    drift: tuple[str, ...] = ()


ABSENT = Observation(exists=False)


class DependencyNotReady(Exception):
    """A referenced object (Secret, Listener, repository) is not there yet; retry later."""


class ExternalClient(Protocol[SpecT]):
    """One kind of external resource, connected for one reconcile.

    The contract, as in crossplane-runtime: every method is idempotent; observe() never
    mutates; create() raises `Conflict` if the natural key is taken (the reconciler then
    adopts via find() when it knows a create of its own was in flight); delete() treats
    "absent" as done. Control-plane errors propagate as `deployplane.api.errors` classes.
    """

    id_field: str
    """Status field holding the external id (`deploymentId`, `listenerId`)."""

    def adopt_id(self, mr: Managed[SpecT]) -> str | None:
        """The id the spec asks to adopt, if any."""
        ...

    def natural_key(self, mr: Managed[SpecT]) -> str:
        """What identifies the resource on the control plane besides its id."""
        ...

    async def observe(self, mr: Managed[SpecT], external_id: str, *, full: bool) -> Observation:
        """Read the resource. `full=False` may only refresh what is in progress."""
        ...

    async def find(self, mr: Managed[SpecT]) -> str | None:
        """Look the resource up by its natural key; None when there is none."""
        ...

    async def create(self, mr: Managed[SpecT]) -> Observation:
        """Create the resource; the observation carries its id in `status`."""
        ...

    async def update(self, mr: Managed[SpecT], latest: Observation) -> Observation:
        """Bring the resource to the spec; return the observation after the change."""
        ...

    async def delete(self, mr: Managed[SpecT], external_id: str) -> bool:
        """Ask for deletion; True once the resource is gone."""
        ...


class Connecter(Protocol[SpecT]):
    """Builds an ExternalClient for one resource: credentials, resolved references."""

    async def connect(self, mr: Managed[SpecT]) -> ExternalClient[SpecT]: ...
