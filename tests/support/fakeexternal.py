"""Function-adapter fakes of `ExternalClient` and `Connecter`, after crossplane-runtime's
`ExternalClientFns`: every method is a field with a harmless default, so a test sets
only the behaviour it is about. Every call, and every status write made through
`ExternalFns.mark`/`unmark`/`write_status`, lands in one ordered journal, so tests can prove order
(the create-pending marker before the create, the id right after it)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any, Generic, Self, TypeVar

from pydantic import BaseModel, Field

from deployplane.externals.agentdeployment import AgentDeploymentReason as Reason
from deployplane.externals.errors import classified
from deployplane.kinds.agentdeployment.spec import UpdatePolicy
from deployplane.kinds.common import DeletionPolicy, ManagementPolicy
from deployplane.reconcile.approval import PendingChange
from deployplane.reconcile.external import ExternalClient, Managed, Observation, Phase
from deployplane.reconcile.marker import CreatePending
from deployplane.reconcile.status import ResourceStatus

T = TypeVar("T")
Call = tuple[Any, ...]

DEP_ID = "dep-1"


class FakeSpec(BaseModel):
    """The smallest spec the generic reconciler can drive."""

    deletion_policy: DeletionPolicy = DeletionPolicy.DELETE
    management_policy: ManagementPolicy = ManagementPolicy.FULL
    update_policy: UpdatePolicy = UpdatePolicy.AUTOMATIC


class FakeStatus(ResourceStatus):
    """The smallest status: the external id, and fields the observations may set."""

    deployment_id: str | None = Field(None, description="Id on the control plane.")
    latest_revision_id: str | None = Field(None, description="A field an observation sets.")
    image_version: str | None = Field(None, description="Another one.")
    pending_change: PendingChange | None = Field(None, description="A change held.")

    @property
    def external_id(self) -> str | None:
        return self.deployment_id

    def with_external_id(self, external_id: str | None) -> Self:
        return self.evolve(deployment_id=external_id)

    def held_change(self) -> PendingChange | None:
        return self.pending_change

    def with_pending_change(self, change: PendingChange | None) -> Self:
        return self.evolve(pending_change=change)


@dataclass(frozen=True)
class FakeDelta:
    fields: tuple[str, ...]
    action: str = "update"
    reasons: tuple[str, ...] = ()


Mr = Managed[FakeSpec, FakeStatus]
Obs = Observation[FakeStatus, FakeDelta]


def observed(
    external_id: str = DEP_ID,
    phase: Phase = Phase.READY,
    reason: str = Reason.DEPLOYED,
    message: str = "",
    *,
    up_to_date: bool = True,
    drift: tuple[str, ...] = (),
    action: str = "update",
    reasons: tuple[str, ...] = (),
    **status: Any,
) -> Obs:
    """An observation of an existing resource (`status`: more camelCase status fields)."""
    return Observation(
        exists=True,
        status=FakeStatus.model_validate({"deploymentId": external_id, **status}),
        phase=phase,
        reason=reason,
        message=message,
        patch=None if up_to_date else FakeDelta(drift, action, reasons),
    )


def raises(exc: BaseException) -> Callable[..., Any]:
    """A behaviour that fails with `exc`."""

    def fail(*_: Any) -> Any:
        raise exc

    return fail


@dataclass
class Returns(Generic[T]):
    """A behaviour that returns `values` one after another, then the last one again.
    It keeps its place: a table of cases that several tests run hands each run a
    `fresh()` copy (see `fresh`), so that a case gives the same in any order."""

    values: tuple[T, ...]
    calls: int = 0

    def __call__(self, *_: Any) -> T:
        value = self.values[min(self.calls, len(self.values) - 1)]
        self.calls += 1
        return value

    def fresh(self) -> Returns[T]:
        return Returns(self.values)


def returns(*values: T) -> Returns[T]:
    """A behaviour that returns `values` one after another, then the last one again."""
    return Returns(values)


def fresh(fns: dict[str, Callable[..., Any]]) -> dict[str, Callable[..., Any]]:
    """A case's behaviours for one run: each `returns` from its first value again."""
    return {name: fn.fresh() if isinstance(fn, Returns) else fn for name, fn in fns.items()}


def _synced(latest: Obs) -> Obs:
    return replace(latest, patch=None)


@dataclass
class ExternalFns:
    """ExternalClient[FakeSpec] whose behaviour is plain functions."""

    journal: list[Call] = field(default_factory=list)
    natural_key: str = "agent"
    adopt_id: str | None = None
    observe_fn: Callable[[str, bool], Obs] = lambda external_id, _full: observed(external_id)
    find_fn: Callable[[], str | None] = lambda: None
    find_by_key_fn: Callable[[str], str | None] = lambda _key: None
    """A lookup by a key other than the spec's (the marker's, once the spec changed)."""
    create_fn: Callable[[], Obs] = lambda: observed("dep-new", Phase.PROGRESSING, Reason.CREATING)
    update_fn: Callable[[Obs], Obs] = _synced
    delete_fn: Callable[[str], bool] = lambda _external_id: True
    resolve_fn: Callable[[], str] = lambda: "desired"
    resolved: int = 0
    """How many times the references were resolved (at most once a pass)."""

    async def resolve(self, mr: Mr) -> str:
        self.resolved += 1
        return self.resolve_fn()

    async def observe(self, mr: Mr, external_id: str, desired: str | None) -> Obs:
        full = desired is not None
        self.journal.append(("observe", external_id, full))
        return self.observe_fn(external_id, full)

    async def find(self, mr: Mr, key: str | None = None) -> str | None:
        """Journals ("find",) for the spec's natural key, ("find", key) for another."""
        if key is None or key == self.natural_key:
            self.journal.append(("find",))
            return self.find_fn()
        self.journal.append(("find", key))
        return self.find_by_key_fn(key)

    async def create(self, mr: Mr, desired: str) -> Obs:
        assert desired == "desired"
        self.journal.append(("create",))
        return self.create_fn()

    async def update(self, mr: Mr, latest: Obs, patch: FakeDelta) -> Obs:
        assert patch is latest.patch
        self.journal.append(("update",))
        return self.update_fn(latest)

    async def delete(self, mr: Mr, external_id: str) -> bool:
        self.journal.append(("delete", external_id))
        return self.delete_fn(external_id)

    async def mark(self, marker: CreatePending) -> None:
        """A MarkerWriter: journals the marker written before a create call."""
        value = {"key": marker.key, "resourceVersion": marker.resource_version}
        self.journal.append(("mark", value))

    async def unmark(self) -> None:
        self.journal.append(("unmark",))

    async def write_status(self, patch: dict[str, Any]) -> None:
        """Journals a durable status patch (None values delete keys)."""
        self.journal.append(("write", patch))


@dataclass
class ConnecterFns:
    """Connecter[FakeSpec] handing out one ExternalFns (or failing to connect)."""

    ext: ExternalFns
    connect_error: BaseException | None = None

    async def connect(self, mr: Mr) -> ExternalClient[FakeSpec, FakeStatus, str, FakeDelta]:
        """The fake client as the real ones reach the core: its control-plane errors
        classified (`deployplane.externals.errors.classified`)."""
        return await classified(_Raw(self)).connect(mr)


@dataclass
class _Raw:
    fns: ConnecterFns

    async def connect(self, mr: Mr) -> ExternalFns:
        self.fns.ext.journal.append(("connect",))
        if self.fns.connect_error is not None:
            raise self.fns.connect_error
        return self.fns.ext
