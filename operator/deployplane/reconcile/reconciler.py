"""The generic reconciler: observe -> create | update | nothing, then publish status.

One instance drives any kind through its `Connecter`/`ExternalClient`. It owns the
protocol that every kind shares: crash-safe creation (a create-pending marker written
before the create call, adoption by natural key afterwards), adoption of an existing
resource by id, drift correction, the kstatus conditions, which errors retry and which
stall, and the requeue schedule. It returns an `Outcome`; it never sleeps.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, Literal

from deployplane.api import errors
from deployplane.crd.status import (
    FALSE,
    TRUE,
    UNKNOWN,
    Condition,
    ConditionType,
    Reason,
    set_condition,
)
from deployplane.reconcile.external import (
    Connecter,
    DependencyNotReady,
    ExternalClient,
    Managed,
    Observation,
    Phase,
    SpecT,
)

StatusWriter = Callable[[dict[str, Any]], Awaitable[None]]
"""Merge-patches the status at once (None deletes a key). Used for the create-pending
marker, which must be durable before the create call, whatever happens after."""

CREATE_PENDING = "createPending"


@dataclass(frozen=True)
class Timing:
    """The requeue schedule. Polls back off while a revision is in progress; errors back
    off separately; a settled resource is looked at again every `resync` seconds."""

    poll_initial: float = 2.0
    poll_max: float = 30.0
    retry_initial: float = 2.0
    retry_max: float = 120.0
    resync: float = 600.0

    def poll_delay(self, attempt: int) -> float:
        return min(self.poll_max, self.poll_initial * 1.5**attempt)

    def retry_delay(self, attempt: int) -> float:
        return min(self.retry_max, self.retry_initial * 2.0**attempt)


@dataclass(frozen=True)
class EventRecord:
    """A Kubernetes Event to post: only on meaningful transitions, never per poll."""

    type: Literal["Normal", "Warning"]
    reason: str
    message: str


@dataclass(frozen=True)
class Outcome:
    """What a reconcile decided: the whole status to publish and when to come back."""

    status: dict[str, Any]
    requeue_after: float
    settled: bool
    """True when nothing is in progress or being retried: the next visit is a resync."""
    events: tuple[EventRecord, ...] = ()


@dataclass
class _Verdict:
    phase: Phase | None  # None: the call failed, readiness unknown
    synced: bool
    reason: str
    message: str
    terminal: bool = False
    retry_after: float | None = None
    kind_status: Mapping[str, Any] = field(default_factory=dict)


_TERMINAL_REASONS: dict[type[errors.ControlPlaneError], Reason] = {
    errors.Invalid: Reason.INVALID_SPEC,
    errors.Conflict: Reason.CONFLICT,
    errors.NotFound: Reason.NOT_FOUND,
    errors.Unauthorized: Reason.UNAUTHORIZED,
    errors.Forbidden: Reason.FORBIDDEN,
}
_AUTH_MESSAGES: dict[type[errors.ControlPlaneError], str] = {
    errors.Unauthorized: "the control plane refused the API key",
    errors.Forbidden: "the API key may not act in this workspace",
}


def classify(exc: errors.ControlPlaneError) -> tuple[Reason, bool]:
    """(reason, terminal) for a control-plane error, the ACK way: retryable errors back
    off and keep trying; everything a user must fix stalls until the spec changes."""
    if isinstance(exc, errors.RateLimited):
        return Reason.RATE_LIMITED, False
    for cls, reason in _TERMINAL_REASONS.items():
        if isinstance(exc, cls):
            return reason, True
    if exc.retryable:
        return Reason.CONTROL_PLANE_UNAVAILABLE, False
    return Reason.INVALID_SPEC, True


def error_message(exc: errors.ControlPlaneError) -> str:
    for cls, text in _AUTH_MESSAGES.items():
        if isinstance(exc, cls):
            return f"{text}: {exc}"
    return str(exc)


class Reconciler(Generic[SpecT]):
    """Drives one kind. Stateless between calls: all it knows comes from `Managed`."""

    def __init__(self, connecter: Connecter[SpecT], *, kind: str, timing: Timing) -> None:
        self._connecter = connecter
        self.kind = kind
        self.timing = timing

    async def reconcile(
        self,
        mr: Managed[SpecT],
        *,
        write_status: StatusWriter,
        attempt: int = 0,
        resync_due: bool = False,
    ) -> Outcome:
        """One pass. `attempt` counts consecutive unsettled passes (for backoff);
        `resync_due` forces a full observation even while only polling a revision."""
        events: list[EventRecord] = []
        ext: ExternalClient[SpecT] | None = None
        status = _PassStatus(mr.status, write_status)
        try:
            ext = await self._connecter.connect(mr)
            obs = await self._sync(mr, ext, status, events, full=self._wants_full(mr, resync_due))
            verdict = _Verdict(
                phase=obs.phase,
                synced=True,
                reason=obs.reason,
                message=obs.message,
                terminal=obs.phase is Phase.FAILED,
                kind_status=obs.status,
            )
        except DependencyNotReady as exc:
            verdict = _Verdict(None, False, Reason.DEPENDENCY_NOT_READY, str(exc))
        except errors.ControlPlaneError as exc:
            reason, terminal = classify(exc)
            verdict = _Verdict(
                Phase.FAILED if terminal else None,
                False,
                reason,
                error_message(exc),
                terminal=terminal,
                retry_after=exc.retry_after,
            )
        return compose_outcome(status.current, mr.generation, verdict, attempt, events, self.timing)

    def invalid_spec(self, status: Mapping[str, Any], generation: int, message: str) -> Outcome:
        """The outcome for a spec that cannot even be read: stalled until it changes."""
        verdict = _Verdict(Phase.FAILED, False, Reason.INVALID_SPEC, message, terminal=True)
        return compose_outcome(status, generation, verdict, 0, [], self.timing)

    async def finalize(self, mr: Managed[SpecT]) -> bool:
        """Handle deletion of the custom resource; True once it may be released."""
        if str(getattr(mr.spec, "deletion_policy", "Delete")) == "Orphan":
            return True
        ext = await self._connecter.connect(mr)
        external_id = mr.status.get(ext.id_field) or ext.adopt_id(mr)
        if not external_id and mr.status.get(CREATE_PENDING):
            # A create may have reached the control plane before a crash: delete it too.
            external_id = await ext.find(mr)
        if not external_id:
            return True
        return await ext.delete(mr, str(external_id))

    # ------------------------------------------------------------------ internals

    @staticmethod
    def _wants_full(mr: Managed[SpecT], resync_due: bool) -> bool:
        """Only a revision in progress for an unchanged, synced spec may be merely polled."""
        if resync_due or mr.status.get("observedGeneration") != mr.generation:
            return True
        conditions = {c.get("type"): c for c in mr.status.get("conditions", [])}
        polling = conditions.get(ConditionType.RECONCILING, {}).get("status") == TRUE
        synced = conditions.get(ConditionType.SYNCED, {}).get("status") == TRUE
        return not (polling and synced)

    async def _sync(
        self,
        mr: Managed[SpecT],
        ext: ExternalClient[SpecT],
        status: _PassStatus,
        events: list[EventRecord],
        *,
        full: bool,
    ) -> Observation:
        known_id = mr.status.get(ext.id_field)
        adopt_id = ext.adopt_id(mr)
        external_id = str(known_id or adopt_id or "") or None
        obs: Observation | None = None

        if external_id:
            adopting = not known_id
            obs = await ext.observe(mr, external_id, full=full or adopting)
            if not obs.exists:
                if adopting:
                    raise errors.NotFound(
                        f"{self.kind} {external_id} to adopt (spec) does not exist on the "
                        "control plane"
                    )
                events.append(
                    EventRecord(
                        "Warning",
                        "ExternalResourceGone",
                        f"{self.kind} {external_id} disappeared from the control plane; "
                        "creating it again",
                    )
                )
                await status.write({ext.id_field: None})
                obs = None
            elif adopting:
                events.append(
                    EventRecord("Normal", "Adopted", f"Adopted {self.kind} {external_id}")
                )

        if obs is None:
            obs = await self._create(mr, ext, status, events)

        if full and not obs.up_to_date:
            drift = ", ".join(obs.drift) or "spec"
            obs = await ext.update(mr, obs)
            events.append(
                EventRecord("Normal", "Updated", f"Brought {drift} in line with the spec")
            )
        return obs

    async def _create(
        self,
        mr: Managed[SpecT],
        ext: ExternalClient[SpecT],
        status: _PassStatus,
        events: list[EventRecord],
    ) -> Observation:
        if mr.status.get(CREATE_PENDING):
            # A previous pass may have created it and died before recording the id.
            found = await ext.find(mr)
            if found:
                status.record({ext.id_field: found, CREATE_PENDING: None})
                events.append(
                    EventRecord("Normal", "Adopted", f"Recovered {self.kind} {found} after restart")
                )
                return await ext.observe(mr, found, full=True)

        await status.write(
            {CREATE_PENDING: {"key": ext.natural_key(mr), "resourceVersion": mr.resource_version}}
        )
        try:
            obs = await ext.create(mr)
        except (errors.Conflict, errors.Invalid) as exc:
            obs = await self._create_refused(mr, ext, status, exc)
        new_id = obs.status[ext.id_field]
        # Published with the outcome, in the same write as the first conditions: until
        # then the durable marker covers a crash (the next pass finds and adopts it).
        status.record({ext.id_field: new_id, CREATE_PENDING: None})
        events.append(EventRecord("Normal", "Created", f"Created {self.kind} {new_id}"))
        return obs

    @staticmethod
    async def _create_refused(
        mr: Managed[SpecT],
        ext: ExternalClient[SpecT],
        status: _PassStatus,
        exc: errors.Conflict | errors.Invalid,
    ) -> Observation:
        """A refused create. A 422 is an invalid spec. A 409, or a 400 (the published
        contract's answer, which also means "invalid"), may be a natural key already
        taken: ours (a create whose answer was lost before a crash: the marker predates
        this pass) is adopted; anybody else's is a conflict the user must solve, told
        in the service's words; a 400 with the key free is an invalid spec."""
        if isinstance(exc, errors.Invalid) and exc.status_code != 400:
            raise exc
        ours = bool(mr.status.get(CREATE_PENDING))
        found = await ext.find(mr) if ours or isinstance(exc, errors.Invalid) else None
        if found and ours:
            return await ext.observe(mr, found, full=True)
        await status.write({CREATE_PENDING: None})
        if found and isinstance(exc, errors.Invalid):
            raise errors.Conflict(
                f"{exc} ({ext.natural_key(mr)!r} is already taken on the control plane)",
                method=exc.method,
                path=exc.path,
                status_code=exc.status_code,
                detail=exc.detail,
            ) from exc
        raise exc


class _PassStatus:
    """The status as it stands during one pass: what `mr.status` said, plus the durable
    writes made so far (`write`: the marker) and what is only recorded, to be published
    with the outcome (`record`: the new id). The outcome builds on it, so that a later
    error can neither bring back a cleared marker, nor drop a marker written for a
    create whose answer never came, nor lose an id the control plane just gave."""

    def __init__(self, status: Mapping[str, Any], writer: StatusWriter) -> None:
        self.current = dict(status)
        self._writer = writer

    async def write(self, patch: dict[str, Any]) -> None:
        await self._writer(patch)
        self.record(patch)

    def record(self, patch: Mapping[str, Any]) -> None:
        for key, value in patch.items():
            if value is None:
                self.current.pop(key, None)
            else:
                self.current[key] = value


def compose_outcome(
    current: Mapping[str, Any],
    gen: int,
    verdict: _Verdict,
    attempt: int,
    events: list[EventRecord],
    timing: Timing,
) -> Outcome:
    """The whole next status (conditions included) and the requeue, from a verdict."""
    previous = [Condition.model_validate(c) for c in current.get("conditions", [])]

    def cond(type_: ConditionType, status: str, reason: str, message: str = "") -> Condition:
        return set_condition(previous, type_, status, reason, message, gen)

    phase = verdict.phase
    if verdict.synced:
        synced = cond(ConditionType.SYNCED, TRUE, Reason.RECONCILE_SUCCESS)
    else:
        synced = cond(ConditionType.SYNCED, FALSE, verdict.reason, verdict.message)

    if phase is Phase.READY:
        ready = cond(ConditionType.READY, TRUE, verdict.reason or Reason.AVAILABLE, verdict.message)
    elif phase is None:
        # The call failed: readiness of the external resource is not known anew.
        old = next((c for c in previous if c.type == ConditionType.READY), None)
        ready = old or cond(ConditionType.READY, UNKNOWN, verdict.reason, verdict.message)
    else:
        ready = cond(ConditionType.READY, FALSE, verdict.reason, verdict.message)

    in_progress = phase is Phase.PROGRESSING or (phase is None and not verdict.terminal)
    reconciling = cond(
        ConditionType.RECONCILING,
        TRUE if in_progress else FALSE,
        verdict.reason if in_progress else Reason.RECONCILE_SUCCESS,
        verdict.message if in_progress else "",
    )
    stalled = cond(
        ConditionType.STALLED,
        TRUE if verdict.terminal else FALSE,
        verdict.reason if verdict.terminal else Reason.RECONCILE_SUCCESS,
        verdict.message if verdict.terminal else "",
    )
    conditions = [ready, synced, reconciling, stalled]
    events.extend(_transition_events(previous, conditions))

    status: dict[str, Any] = {k: v for k, v in current.items() if k != "conditions"}
    status.update(verdict.kind_status)
    status["observedGeneration"] = gen
    status["conditions"] = [c.model_dump(mode="json", exclude_none=True) for c in conditions]
    if verdict.synced:
        status.pop(CREATE_PENDING, None)

    if verdict.terminal:
        requeue, settled = timing.resync, True
    elif phase is Phase.PROGRESSING:
        requeue, settled = timing.poll_delay(attempt), False
    elif phase is None:
        requeue = max(timing.retry_delay(attempt), verdict.retry_after or 0.0)
        settled = False
    else:
        requeue, settled = timing.resync, True
    return Outcome(status=status, requeue_after=requeue, settled=settled, events=tuple(events))


_WARNING_TRANSITIONS = {(ConditionType.STALLED, TRUE), (ConditionType.SYNCED, FALSE)}


def _transition_events(previous: list[Condition], current: list[Condition]) -> list[EventRecord]:
    """Events for the transitions a person cares about: became Ready, stalled, lost sync."""
    before = {c.type: c for c in previous}
    out: list[EventRecord] = []
    for c in current:
        old = before.get(c.type)
        flipped = old is None or old.status != c.status or old.reason != c.reason
        if not flipped:
            continue
        if c.type == ConditionType.READY and c.status == TRUE:
            event = EventRecord("Normal", c.reason, c.message or "Ready")
        elif (c.type, c.status) in _WARNING_TRANSITIONS:
            event = EventRecord("Warning", c.reason, c.message)
        else:
            continue
        # A terminal error flips Synced and Stalled together: one event says it.
        if event not in out:
            out.append(event)
    return out
