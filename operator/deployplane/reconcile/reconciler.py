"""The generic reconciler: resolve -> observe -> diff -> create | update | nothing.

One instance drives any kind through its `Connecter`/`ExternalClient`. It owns the
protocol that every kind shares: crash-safe creation (a create-pending marker written
before the create call, adoption by natural key afterwards), adoption of an existing
resource by id, drift correction, the kstatus conditions, which errors retry and which
stall. The `Schedule` says when to come back. It returns an `Outcome`; it never sleeps.

A pass looks (`_Pass.look`: reads only), decides (`decision.decide`, a pure function:
create, send the patch, nothing, or hold it for approval) and acts (`_Pass.act`: the
writes). `Reconciler.preview` looks and decides without acting, which is what
`deployplane plan` shows: the same functions, so a plan is what a pass then does.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Generic, Protocol

from deployplane.reconcile.approval import PendingChange, waiting_message
from deployplane.reconcile.conditions import TRUE, ConditionType, Reason, find_condition
from deployplane.reconcile.decision import (
    Action,
    Change,
    Decision,
    Step,
    change_of,
    decide,
    deletes_external,
    observe_only,
)
from deployplane.reconcile.errors import ExternalError, Refusal
from deployplane.reconcile.external import (
    Connecter,
    DependencyNotReady,
    ExternalClient,
    Managed,
    Observation,
    SpecT,
)
from deployplane.reconcile.marker import CreatePending, MarkerWriter, refuse_an_earlier_create
from deployplane.reconcile.mergepatch import merge_patch
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


class PassWriter(MarkerWriter, Protocol):
    """The writes a pass makes durable at once, before it goes on: the create-pending
    marker (`MarkerWriter`, on the object), and a status patch for an id to forget."""

    async def write_status(self, patch: dict[str, Any]) -> None:
        """Merge-patch the status now (None deletes a key)."""
        ...


@dataclass(frozen=True)
class Preview:
    """What a pass would do (`Reconciler.preview`): the decision, and its plan row."""

    decision: Decision
    change: Change


class _NoWrites:
    """The writer of a preview: a pass's reads never write, so any call is a bug."""

    async def mark(self, marker: CreatePending) -> None:
        raise AssertionError("a preview wrote the create marker")

    async def unmark(self) -> None:
        raise AssertionError("a preview took the create marker off")

    async def write_status(self, patch: dict[str, Any]) -> None:
        raise AssertionError("a preview wrote the status")


_NO_WRITES = _NoWrites()

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
            verdict = one.verdict(obs)
        except (DependencyNotReady, ExternalError) as exc:
            verdict = Verdict.failed(exc)
        return compose_outcome(
            status.current, mr.generation, verdict, attempt, events, self.schedule
        )

    def invalid_spec(self, status: StatusT, generation: int, message: str) -> Outcome[StatusT]:
        """The outcome for a spec that cannot even be read: stalled until it changes."""
        verdict: Verdict[StatusT] = Verdict.invalid_spec(message)
        return compose_outcome(status, generation, verdict, 0, [], self.schedule)

    async def preview(self, mr: Managed[SpecT, StatusT]) -> Preview:
        """What a pass over `mr` would do, without doing it (`deployplane plan`): the
        pass's own reads (`_Pass.look`, a full observation) and its own decision
        (`decision.decide`), and nothing written anywhere. Raises what the pass would
        end on (`ExternalError`, `DependencyNotReady`)."""
        ext = await self._connecter.connect(mr)
        one = _Pass(self.kind, mr, ext, _PassStatus(mr.status), _NO_WRITES, [])
        if observe_only(mr):
            await one.observe_only()
            return Preview(Decision(Step.NOTHING), Change(Action.NONE))
        obs = await one.look(full=True)
        decision = decide(mr, obs, full=True)
        return Preview(decision, change_of(decision, obs))

    async def finalize(self, mr: Managed[SpecT, StatusT]) -> bool:
        """Handle deletion of the custom resource; True once it may be released."""
        if not deletes_external(mr):
            return True
        try:
            ext = await self._connecter.connect(mr)
        except DependencyNotReady:
            # Nothing ever created or adopted (no id, no marker): nothing to delete.
            if mr.status.external_id or mr.create_pending:
                raise
            return True
        external_id = mr.status.external_id or ext.adopt_id
        if not external_id and mr.create_pending:
            # A create may have reached the control plane before a crash: delete it too,
            # by the key it was made under (the marker's, whatever the spec says now).
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
    gone: str | None = None
    """A recorded id whose external resource has disappeared (`look`)."""
    pending: PendingChange | None = None
    """The change this pass holds for approval (`act`)."""
    _desired: Any = None
    _resolved: bool = False

    def verdict(self, obs: Obs[StatusT] | None) -> Verdict[StatusT]:
        """What the pass found: the observation's verdict, or a change waiting."""
        if self.pending is not None:
            message = waiting_message(self.mr.name, self.mr.namespace, self.pending)
            return Verdict.awaiting_approval(message, None if obs is None else obs.status)
        assert obs is not None  # only a held create observes nothing
        return Verdict.of_observation(obs)

    async def desired(self) -> Any:
        # Lazily: a poll of a revision in progress needs no references (and no calls).
        if not self._resolved:
            self._desired = await self.ext.resolve(self.mr)
            self._resolved = True
        return self._desired

    def event(self, type_: EventType, reason: EventReason, message: str) -> None:
        self.events.append(EventRecord(type_, reason, message, _ACTIONS.get(reason, "Reconcile")))

    async def sync(self, *, full: bool) -> Obs[StatusT] | None:
        """Look, decide, act: the observation the pass ends with (None: a create held
        for approval, so there is nothing to observe)."""
        obs = await self.look(full=full)
        decision = decide(self.mr, obs, full=full)
        return await self.act(obs, decision)

    async def look(self, *, full: bool) -> Obs[StatusT] | None:
        """The reads of a pass, and nothing it writes: the external resource by its
        recorded id, the spec's id to adopt, or the create marker's key; the references
        resolved whenever what was seen is to be compared, or created. None: there is
        none to observe (never made, or gone: `self.gone`)."""
        mr, ext = self.mr, self.ext
        known_id = mr.status.external_id
        external_id = known_id or ext.adopt_id
        if external_id:
            adopting = not known_id
            desired = await self.desired() if full or adopting else None
            obs = await ext.observe(mr, external_id, desired)
            if obs.exists:
                if adopting:
                    self.event("Normal", EventReason.ADOPTED, f"Adopted {self.kind} {external_id}")
                return obs
            if adopting:
                raise ExternalError(
                    f"{self.kind} {external_id} to adopt (spec) does not exist on the "
                    "control plane",
                    reason=Reason.NOT_FOUND,
                    terminal=True,
                )
            self.gone = external_id
        elif mr.create_pending and mr.create_pending.key != ext.natural_key:
            await refuse_an_earlier_create(ext, mr, mr.create_pending.key, self.kind)
        elif mr.create_pending:
            # A previous pass may have created it and died before recording the id.
            found = await ext.find(mr)
            if found:
                self.status.record(self.status.current.with_external_id(found))
                self.event(
                    "Normal", EventReason.ADOPTED, f"Recovered {self.kind} {found} after restart"
                )
                return await ext.observe(mr, found, await self.desired())
        # The references first: a dependency not ready yet (a Listener without its id,
        # as when Flux applies everything at once) ends the pass before any create, and
        # must leave no marker, or the next pass would adopt whatever carries the name
        # (another namespace's deployment) as its own.
        await self.desired()
        return None

    async def act(self, obs: Obs[StatusT] | None, decision: Decision) -> Obs[StatusT] | None:
        """Carry the decision out: create, send the patch, or hold it for approval."""
        mr = self.mr
        if self.gone is not None:
            await self._forget(self.gone)
        if decision.held:
            self._hold(change_of(decision, obs).pending(mr.generation))
            return obs
        self._clear_pending()
        if decision.step is Step.CREATE:
            return await self._create()
        if decision.step is Step.UPDATE:
            assert obs is not None  # what UPDATE means: a patch for what exists
            assert obs.patch is not None
            fields = ", ".join(obs.drift) or "the spec"
            edited = not applied_at(mr.status, mr.generation)
            obs = await self.ext.update(mr, obs, obs.patch)
            if edited:
                self.event("Normal", EventReason.UPDATED, f"Applied the change to {fields}")
            else:
                message = f"Corrected drift of {fields}: changed on the control plane"
                self.event("Normal", EventReason.DRIFT_CORRECTED, message)
        return obs

    def _hold(self, pending: PendingChange) -> None:
        """A change waits for approval: recorded in the status, told once per change."""
        mr, status = self.mr, self.status
        self.pending = pending
        if status.current.held_change() != pending:
            message = waiting_message(mr.name, mr.namespace, pending)
            self.event("Normal", EventReason.AWAITING_APPROVAL, message)
            status.record(status.current.with_pending_change(pending))

    def _clear_pending(self) -> None:
        if self.status.current.held_change() is not None:
            self.status.record(self.status.current.with_pending_change(None))

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
        self._clear_pending()
        if external_id != known_id:
            self.status.record(self.status.current.with_external_id(external_id))
            message = f"Observing {self.kind} {external_id} (ObserveOnly)"
            self.event("Normal", EventReason.OBSERVING, message)
        return obs

    async def _forget(self, external_id: str) -> None:
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


_ACTIONS = {
    EventReason.CREATED: "Create",
    EventReason.UPDATED: "Update",
    EventReason.DRIFT_CORRECTED: "Update",
    EventReason.ADOPTED: "Adopt",
    EventReason.OBSERVING: "Adopt",
}
"""The Event's action for a reason the reconciler records (else Reconcile)."""
