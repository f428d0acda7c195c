"""The contract between the generic reconciler and one kind of external resource."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Any, Generic, Protocol, TypeVar, runtime_checkable

from pydantic import BaseModel

from deployplane.reconcile.marker import CreatePending
from deployplane.reconcile.status import StatusT

SpecT = TypeVar("SpecT", bound=BaseModel)
DesiredT = TypeVar("DesiredT")


class Delta(Protocol):
    """What a pure diff found: the request that brings the resource to the spec."""

    @property
    def fields(self) -> tuple[str, ...]:
        """Which fields differ (for events and logs); never values, which may be secret."""
        ...

    @property
    def action(self) -> str:
        """What sending it does, in a plan's words (`decision.Action`): `update`, or a
        kind's own (an AgentDeployment's `new-revision`, `rebuild`)."""
        ...

    @property
    def reasons(self) -> tuple[str, ...]:
        """Why it does that (an AgentDeployment's new revision: image, source, config)."""
        ...


PatchT = TypeVar("PatchT", bound=Delta)


@dataclass(frozen=True)
class Managed(Generic[SpecT, StatusT]):
    """A snapshot of one custom resource, as the reconciler sees it."""

    namespace: str
    name: str
    uid: str
    generation: int
    spec: SpecT
    status: StatusT
    resource_version: str | None = None
    create_pending: CreatePending | None = None
    """The create marker on the object while no id is recorded (`reconcile.marker`): a
    create of this resource may have reached the control plane without its id being
    recorded (None once an id is: the id supersedes it)."""
    approved_generation: int | None = None
    """The generation the approval annotation names (`reconcile.approval`), if any."""

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


class Phase(Enum):
    """Where the external resource stands, as far as readiness goes."""

    READY = "Ready"
    PROGRESSING = "Progressing"
    FAILED = "Failed"


@dataclass(frozen=True)
class Observation(Generic[StatusT, PatchT]):
    """What observe() saw. `status` holds the kind's observed fields: those it sets
    (None included) replace what the resource's status knew, the others stay."""

    exists: bool
    status: StatusT | None = None
    phase: Phase = Phase.READY
    reason: str = ""
    message: str = ""
    patch: PatchT | None = None
    """The diff between the resolved spec and the resource; None when in sync (or not
    compared: a poll of what is in progress)."""
    ready_event: tuple[str, str] | None = None
    """(reason, message) of the Event that Ready turning True posts, when it is not the
    condition's own: Ready reached again by a change applied to what already ran, which
    is not the condition's news (a revision deployed) a second time."""

    @property
    def up_to_date(self) -> bool:
        return self.patch is None

    @property
    def drift(self) -> tuple[str, ...]:
        return () if self.patch is None else self.patch.fields

    @property
    def external_id(self) -> str | None:
        return None if self.status is None else self.status.external_id


ABSENT: Observation[Any, Any] = Observation(exists=False)


class DependencyNotReady(Exception):
    """A referenced object (Secret, Listener, repository) is not there yet, or may not be
    used; retry later. `reason` is the Synced condition's reason."""

    reason: str = "DependencyNotReady"


class ExternalClient(Protocol[SpecT, StatusT, DesiredT, PatchT]):
    """One kind of external resource, connected for one reconcile of one resource.

    The contract, as in crossplane-runtime: every method is idempotent; observe() never
    mutates; create() raises `Conflict` if the natural key is taken (the reconciler then
    adopts via find() when it knows a create of its own was in flight); delete() treats
    "absent" as done. Errors reach the core as `reconcile.errors.ExternalError`, classified
    by the kind (`deployplane.externals.errors.classified` wraps its client).
    The client keeps no state between calls: update() is handed the patch it sends.
    """

    natural_key: str
    """What identifies the resource on the control plane besides its id."""
    adopt_id: str | None
    """The id the spec asks to adopt, if any."""

    async def resolve(self, mr: Managed[SpecT, StatusT]) -> DesiredT:
        """The spec with every reference (Secrets, Listeners, repositories) resolved."""
        ...

    async def observe(
        self, mr: Managed[SpecT, StatusT], external_id: str, desired: DesiredT | None
    ) -> Observation[StatusT, PatchT]:
        """Read the resource and diff it against `desired`. Without `desired` only what
        is in progress is refreshed (a poll), and nothing is compared."""
        ...

    async def find(self, mr: Managed[SpecT, StatusT], key: str | None = None) -> str | None:
        """Look the resource up by a natural key (`key`, else the spec's:
        `natural_key`); None when there is none."""
        ...

    async def create(
        self, mr: Managed[SpecT, StatusT], desired: DesiredT
    ) -> Observation[StatusT, PatchT]:
        """Create the resource; the observation's status carries its id."""
        ...

    async def update(
        self, mr: Managed[SpecT, StatusT], latest: Observation[StatusT, PatchT], patch: PatchT
    ) -> Observation[StatusT, PatchT]:
        """Send `patch` to the resource `latest` saw; the observation after the change."""
        ...

    async def delete(self, mr: Managed[SpecT, StatusT], external_id: str) -> bool:
        """Ask for deletion; True once the resource is gone."""
        ...


class Connecter(Protocol[SpecT, StatusT, DesiredT, PatchT]):
    """Builds an ExternalClient for one resource: credentials, identity."""

    async def connect(
        self, mr: Managed[SpecT, StatusT]
    ) -> ExternalClient[SpecT, StatusT, DesiredT, PatchT]: ...


@runtime_checkable
class Releaser(Protocol):
    """A connecter whose resources hold something of Kubernetes' while they exist (a
    ControlPlaneConnection protects its API key Secret): `release` lets go of it once
    the resource is finalized, before our finalizer comes off."""

    async def release(self, mr: Managed[Any, Any]) -> None: ...
