"""The generic reconciler: resolve -> observe -> diff -> create | update | nothing.

One instance drives any kind through its `Connecter`/`ExternalClient`. It owns the
protocol that every kind shares: crash-safe creation (a create-pending marker written
before the create call, adoption by natural key afterwards), adoption of an existing
resource by id, drift correction, the kstatus conditions, which errors retry and which
stall. The `Schedule` says when to come back. It returns an `Outcome`; it never sleeps.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Generic, Protocol

from deployplane.reconcile.conditions import TRUE, ConditionType, Reason, find_condition
from deployplane.reconcile.errors import ExternalError, Refusal
from deployplane.reconcile.external import (
    Connecter,
    DependencyNotReady,
    ExternalClient,
    Managed,
    Observation,
    SpecT,
)
from deployplane.reconcile.marker import CreatePending, MarkerWriter
from deployplane.reconcile.outcome import (
    EventReason,
    EventRecord,
    EventType,
    Outcome,
    Verdict,
    compose_outcome,
)
from deployplane.reconcile.schedule import Schedule
from deployplane.reconcile.status import ResourceStatus, StatusT, to_kube
from deployplane.reconcile.statuspatch import merge_patch


class PassWriter(MarkerWriter, Protocol):
    """The writes a pass makes durable at once, before it goes on: the create-pending
    marker (`MarkerWriter`, on the object), and a status patch for an id to forget."""

    async def write_status(self, patch: dict[str, Any]) -> None:
        """Merge-patch the status now (None deletes a key)."""
        ...


Ext = ExternalClient[SpecT, StatusT, Any, Any]
Obs = Observation[StatusT, Any]


class Reconciler(Generic[SpecT, StatusT]):
    """Drives one kind. Stateless between calls: all it knows comes from `Managed`."""

    def __init__(
        self, connecter: Connecter[SpecT, StatusT, Any, Any], *, kind: str, schedule: Schedule
    ) -> None:
        self._connecter = connecter
        self.kind = kind
        self.schedule = schedule

    async def reconcile(
        self,
        mr: Managed[SpecT, StatusT],
        *,
        writes: PassWriter,
        attempt: int = 0,
        resync_due: bool = False,
    ) -> Outcome[StatusT]:
        """One pass. `writes` makes the create-pending marker (before a create call) and
        a forgotten id durable; `attempt` counts consecutive unsettled passes (for
        backoff); `resync_due` forces a full observation even while only polling."""
        events: list[EventRecord] = []
        status = _PassStatus(mr.status)
        verdict: Verdict[StatusT]
        try:
            ext = await self._connecter.connect(mr)
            full = self.schedule.wants_full(mr.status, mr.generation, resync_due)
            one = _Pass(self.kind, mr, ext, status, writes, events)
            obs = await (one.observe_only() if observe_only(mr) else one.sync(full=full))
            verdict = Verdict.of_observation(obs)
        except (DependencyNotReady, ExternalError) as exc:
            verdict = Verdict.failed(exc)
        return compose_outcome(
            status.current, mr.generation, verdict, attempt, events, self.schedule
        )

    def invalid_spec(self, status: StatusT, generation: int, message: str) -> Outcome[StatusT]:
        """The outcome for a spec that cannot even be read: stalled until it changes."""
        verdict: Verdict[StatusT] = Verdict.invalid_spec(message)
        return compose_outcome(status, generation, verdict, 0, [], self.schedule)

    async def finalize(self, mr: Managed[SpecT, StatusT]) -> bool:
        """Handle deletion of the custom resource; True once it may be released."""
        if str(getattr(mr.spec, "deletion_policy", "Delete")) == "Orphan" or observe_only(mr):
            return True
        try:
            ext = await self._connecter.connect(mr)
        except DependencyNotReady:
            if mr.status.external_id or mr.create_pending:
                raise  # something of ours may exist: deleted only through the connection
            # Nothing was ever created or adopted (no id, no marker), and there is no
            # connection to ask through: nothing to delete, nothing to wait for.
            return True
        external_id = mr.status.external_id or ext.adopt_id
        if not external_id and mr.create_pending:
            # A create may have reached the control plane before a crash: delete it too,
            # by the key it was made under (the marker's: the spec may name another now).
            external_id = await ext.find(mr, mr.create_pending.key)
        if not external_id:
            return True
        return await ext.delete(mr, external_id)


@dataclass
class _Pass(Generic[SpecT, StatusT]):
    """One pass over one resource: its references are resolved at most once."""

    kind: str
    mr: Managed[SpecT, StatusT]
    ext: Ext[SpecT, StatusT]
    status: _PassStatus[StatusT]
    writes: PassWriter
    events: list[EventRecord]
    _desired: Any = None
    _resolved: bool = False

    async def desired(self) -> Any:
        # Lazily: a poll of a revision in progress needs no references (and no calls).
        if not self._resolved:
            self._desired = await self.ext.resolve(self.mr)
            self._resolved = True
        return self._desired

    def event(self, type_: EventType, reason: EventReason, message: str) -> None:
        self.events.append(EventRecord(type_, reason, message, _ACTIONS.get(reason, "Reconcile")))

    async def sync(self, *, full: bool) -> Obs[StatusT]:
        mr, ext = self.mr, self.ext
        known_id = mr.status.external_id
        external_id = known_id or ext.adopt_id
        obs: Obs[StatusT] | None = None
        if external_id:
            adopting = not known_id
            desired = await self.desired() if full or adopting else None
            obs = await ext.observe(mr, external_id, desired)
            if not obs.exists:
                await self._gone(external_id, adopting)
                obs = None
            elif adopting:
                self.event("Normal", EventReason.ADOPTED, f"Adopted {self.kind} {external_id}")
        if obs is None:
            obs = await self._create()
        if full and obs.patch is not None:
            fields = ", ".join(obs.drift) or "the spec"
            edited = not applied_at(mr.status, mr.generation)
            obs = await ext.update(mr, obs, obs.patch)
            if edited:
                self.event("Normal", EventReason.UPDATED, f"Applied the change to {fields}")
            else:
                message = f"Corrected drift of {fields}: changed on the control plane"
                self.event("Normal", EventReason.DRIFT_CORRECTED, message)
        return obs

    async def observe_only(self) -> Obs[StatusT]:
        """ObserveOnly: find the external resource (recorded id, spec id, else natural
        key), report it; never create, update, redeploy or delete anything."""
        mr, ext = self.mr, self.ext
        known_id = mr.status.external_id
        external_id = known_id or ext.adopt_id or await ext.find(mr)
        obs = await ext.observe(mr, external_id, None) if external_id else None
        if obs is None or not obs.exists:
            raise ExternalError(
                f"observe-only: no {self.kind} {external_id or repr(ext.natural_key)} on the "
                "control plane (nothing is created in ObserveOnly)",
                reason=Reason.NOT_FOUND,
                terminal=False,
            )
        if external_id != known_id:
            self.status.record(self.status.current.with_external_id(external_id))
            message = f"Observing {self.kind} {external_id} (ObserveOnly)"
            self.event("Normal", EventReason.OBSERVING, message)
        return obs

    async def _gone(self, external_id: str, adopting: bool) -> None:
        if adopting:
            raise ExternalError(
                f"{self.kind} {external_id} to adopt (spec) does not exist on the control plane",
                reason=Reason.NOT_FOUND,
                terminal=True,
            )
        self.event(
            "Warning",
            EventReason.EXTERNAL_RESOURCE_GONE,
            f"{self.kind} {external_id} disappeared from the control plane; creating it again",
        )
        # Durable before the create below: a pass dying after it must find no id, so
        # that the marker counts and the new one is looked up instead of made twice.
        forgotten = self.status.current.with_external_id(None)
        patch = merge_patch(to_kube(self.status.current), to_kube(forgotten))
        await self.writes.write_status(patch)
        self.status.record(forgotten)

    async def _create(self) -> Obs[StatusT]:
        mr, ext, status = self.mr, self.ext, self.status
        if mr.create_pending and mr.create_pending.key != ext.natural_key:
            await self._earlier_key(mr.create_pending.key)
        elif mr.create_pending:
            # A previous pass may have created it and died before recording the id.
            found = await ext.find(mr)
            if found:
                status.record(status.current.with_external_id(found))
                self.event(
                    "Normal", EventReason.ADOPTED, f"Recovered {self.kind} {found} after restart"
                )
                return await ext.observe(mr, found, await self.desired())
        # The references first: a dependency not ready yet (a Listener without its id,
        # as when Flux applies everything at once) ends the pass before any create, and
        # must leave no marker, or the next pass would adopt whatever carries the name
        # (another namespace's deployment) as its own.
        desired = await self.desired()
        # Written even when a marker is there already: this pass is about to create.
        await self.writes.mark(CreatePending(ext.natural_key, mr.resource_version))
        try:
            obs = await ext.create(mr, desired)
        except ExternalError as exc:
            if exc.refusal is None:
                raise
            obs = await self._create_refused(exc)
        new_id = obs.external_id
        # Published with the outcome, in the same write as the first conditions: until
        # then the durable marker covers a crash (the next pass finds and adopts it).
        status.record(status.current.with_external_id(new_id))
        self.event("Normal", EventReason.CREATED, f"Created {self.kind} {new_id}")
        return obs

    async def _earlier_key(self, key: str) -> None:
        """The marker names another key than the spec: an immutable field (the
        deployment's name, the listener's computeId) was changed while no id was
        recorded, which admission allows. A create under the marker's key may still have
        reached the control plane (its answer lost): if it did, that one is ours but
        under a key the spec no longer names, and this pass neither adopts nor deletes
        it; the user decides (set the field back to adopt it, or delete it). If not,
        the pass creates under the spec's key, marking it."""
        found = await self.ext.find(self.mr, key)
        if found:
            raise ExternalError(
                f"{self.kind} {found} was created as {key!r} for this resource before its "
                f"id was recorded, and the spec now says {self.ext.natural_key!r}: set it "
                f"back to {key!r} to adopt it, or delete {self.kind} {found} on the control "
                "plane to create a new one",
                reason=Reason.CONFLICT,
                terminal=True,
            )

    async def _create_refused(self, exc: ExternalError) -> Obs[StatusT]:
        """A refused create. A 422 is an invalid spec. A 409, or a 400 (the published
        contract's answer, which also means "invalid"), may be a natural key already
        taken: ours (a create whose answer was lost before a crash: the marker predates
        this pass) is adopted; anybody else's is a conflict the user must solve, told
        in the service's words; a 400 with the key free is an invalid spec."""
        mr, ext = self.mr, self.ext
        if exc.refusal is Refusal.INVALID:
            raise exc
        ours = mr.create_pending is not None
        maybe_taken = exc.refusal is Refusal.BAD_REQUEST
        found = await ext.find(mr) if ours or maybe_taken else None
        if found and ours:
            return await ext.observe(mr, found, await self.desired())
        await self.writes.unmark()
        if found and maybe_taken:
            raise exc.with_message(
                f"{exc} ({ext.natural_key!r} is already taken on the control plane)",
                reason=Reason.CONFLICT,
            ) from exc
        raise exc


class _PassStatus(Generic[StatusT]):
    """The status as it stands during one pass: what `mr.status` said, plus what is
    recorded to be published with the outcome (`record`: the new id). The outcome builds
    on it, so that a later error cannot lose an id the control plane just gave."""

    def __init__(self, status: StatusT) -> None:
        self.current = status

    def record(self, status: StatusT) -> None:
        self.current = status


def applied_at(status: ResourceStatus, generation: int) -> bool:
    """Whether a pass already brought the resource to this generation of its spec
    (Synced=True, set for it): a difference found now was made on the control plane
    (drift), not by an edit of the spec, which a pass has yet to apply."""
    synced = find_condition(status.conditions, ConditionType.SYNCED)
    return synced is not None and synced.status == TRUE and synced.observed_generation == generation


def observe_only(mr: Managed[Any, Any]) -> bool:
    """Whether the resource's spec says ObserveOnly (a kind without the field: Full)."""
    return str(getattr(mr.spec, "management_policy", "Full")) == "ObserveOnly"


_ACTIONS = {
    EventReason.CREATED: "Create",
    EventReason.UPDATED: "Update",
    EventReason.DRIFT_CORRECTED: "Update",
    EventReason.ADOPTED: "Adopt",
    EventReason.OBSERVING: "Adopt",
}
"""The Event's action for a reason the reconciler records (else Reconcile)."""
