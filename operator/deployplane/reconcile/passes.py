"""One resource's pass, read top to bottom in `PassRunner.one_pass`; and its
finalization on deletion. Holds no Kopf code: the layer above hands it bodies and an
event poster, and a work queue (`deployplane.reconcile.workqueue`) brings each resource
back when the pass asked.

Why passes rather than handler retries: the wait between passes is the schedule's
decision (revision polls back off 2 s -> 30 s, errors back off on their own, a settled
resource resyncs every 10 min), a spec change must cut any wait short, and a pass that
changes nothing must write nothing to Kubernetes.

A pass, step by step (each step a call, commented where `one_pass` makes it):
1. the resource's memory begins the pass (`resourcestate.py`: first sight, what it has seen);
2. its resync interval (`schedule.resync_of`), a bad annotation told once;
3. paused: nothing else, back at the resync;
4. the status the apiserver holds, which the pass patches against (`resourcestate.py`);
5. whether a resync is due, which forces a full observation (`schedule.py`);
6. the body read as the kind's models (`to_managed`); a spec they refuse stalls;
7. the reconciler: resolve -> observe -> diff -> create | update (`reconciler.py`),
   making its durable writes through the pass's `ObjectWriter` (`writer.py`);
8. the outputs' ConfigMap, if the spec asks for one (`outputs.py`);
9. the status published: one merge patch, none when nothing changed (`writer.py`);
10. the Events, the metrics, the schedule's count of unsettled passes;
11. the Result: when to come back (`Outcome.result`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import KW_ONLY, dataclass
from typing import Any, Generic

from pydantic import ValidationError

from deployplane.naming import camelize
from deployplane.reconcile import deletion, outputs
from deployplane.reconcile.approval import approved_generation
from deployplane.reconcile.conditions import Reason
from deployplane.reconcile.errors import ExternalError
from deployplane.reconcile.external import DependencyNotReady, Managed, Releaser, SpecT
from deployplane.reconcile.finalizer import (
    DELETE_POLL_SECONDS,
    DELETE_RETRY_SECONDS,
    NotYet,
    has_finalizer,
)
from deployplane.reconcile.marker import CreatePending
from deployplane.reconcile.outcome import EventReason, EventRecord, Outcome, retry_soon, unsynced
from deployplane.reconcile.outputs import ConfigMapStore
from deployplane.reconcile.reconciler import Reconciler
from deployplane.reconcile.resourcestate import ResourceState, is_paused
from deployplane.reconcile.schedule import Result, Resync, resync_of
from deployplane.reconcile.schedule import annotation_value as resync_annotation
from deployplane.reconcile.status import StatusT, to_kube
from deployplane.reconcile.writer import ObjectWriter, StatusSink

EventPoster = Callable[[EventRecord], None]


@dataclass
class PassRunner(Generic[SpecT, StatusT]):
    """Runs `Reconciler` for one kind: `one_pass` over a live custom resource each time
    the work queue hands its key to a worker, `finalize` while it is being deleted."""

    reconciler: Reconciler[SpecT, StatusT]
    spec_model: type[SpecT]
    plural: str
    sink: StatusSink
    logger: logging.Logger | None = None
    on_outcome: Callable[[str, Outcome[StatusT]], None] | None = None
    """Told every outcome (metrics), with the resource's namespace/name."""
    _: KW_ONLY
    status_model: type[StatusT]
    on_gone: Callable[[str], None] | None = None
    """Told the namespace/name of a resource whose finalizer may be released."""
    config_maps: ConfigMapStore | None = None
    """Where `spec.writeOutputsTo` is written (None: the kind exports nothing)."""
    releaser: Releaser | None = None
    """What lets go of what the kind's resources hold (a connection's protected API key
    Secret) once one is finalized (None: they hold nothing)."""

    def __post_init__(self) -> None:
        self.log = self.logger or logging.getLogger(f"deployplane.{self.plural}")

    def managed(
        self,
        body: Mapping[str, Any],
        status: Mapping[str, Any],
        marker: CreatePending | None = None,
    ) -> Managed[SpecT, StatusT]:
        """The snapshot the reconciler sees (`managed_of`)."""
        return managed_of(self.spec_model, self.status_model, body, status, marker)

    def has_id(self, status: Mapping[str, Any]) -> bool:
        return bool(self.status_model.model_validate(dict(status)).external_id)

    async def one_pass(
        self, body: Mapping[str, Any], state: ResourceState, *, post_event: EventPoster
    ) -> Result:
        """Reconcile once and publish; the Result says when to come back."""
        meta = body.get("metadata") or {}
        namespace, name = meta["namespace"], meta["name"]
        schedule = self.reconciler.schedule
        # 1. The resource's memory begins the pass: first sight seeds it from the body.
        state.begin_pass(body)
        assert state.status is not None
        # 2. Its resync interval: the annotation's, else the operator's.
        resync = self._resync(body, state, post_event)
        # 3. Paused: nothing is read or written; looked at again as a settled resource is.
        if is_paused(body):
            self.log.info("%s/%s is paused; not reconciling", namespace, name)
            return Result(resync.seconds)
        # 4. The status the apiserver holds (ours while the watch catches up with our
        # writes), which every write of this pass is computed against.
        now = time.monotonic()
        observed = state.settle_observed(body, now, self.has_id)
        write = ObjectWriter(self.sink, self.plural, body, state, observed)
        # 5. A resync due forces a full observation, whatever the status says.
        resync_due = schedule.begin(state.history, now, resync.seconds)
        # 6-7. The body as the kind's models, then the reconciler; a spec the models
        # refuse stalls (in the user's words) without a call.
        try:
            mr = self.managed(body, state.status, state.marker)
        except ValidationError as exc:
            current = self.status_model.model_validate(state.status)
            generation = int(meta.get("generation") or 0)
            outcome = self.reconciler.invalid_spec(current, generation, spec_error_message(exc))
        else:
            outcome = await self.reconciler.reconcile(
                mr, writes=write, attempt=state.history.attempt, resync_due=resync_due
            )
        # 8. The outputs' ConfigMap, in the pass that changes them.
        outcome = await self._outputs(body, state, outcome, write.observed, resync_due)
        # 9. The status: one merge patch against what the apiserver holds (none if equal).
        await write.publish(to_kube(outcome.status))
        # 10. The Events (queued, never awaited), the metrics, the schedule's count.
        for event in outcome.events:
            post_event(event)
        if self.on_outcome is not None:
            self.on_outcome(f"{namespace}/{name}", outcome)
        schedule.end(state.history, outcome.state)
        # 11. When to come back.
        result = outcome.result(resync.seconds)
        delay = result.requeue_after
        self.log.debug(
            "%s/%s reconciled: %s, next pass in %s",
            namespace,
            name,
            outcome.state.value,
            "(never)" if delay is None else f"{delay:.1f}s",
        )
        return result

    async def _outputs(
        self,
        body: Mapping[str, Any],
        state: ResourceState,
        outcome: Outcome[StatusT],
        before: Mapping[str, Any],
        reread: bool,
    ) -> Outcome[StatusT]:
        """The outputs' ConfigMap (`reconcile.outputs`), in the pass that changes them."""
        name = outputs.target(body)
        if name is None or self.config_maps is None:
            return outcome
        data = outcome.status.outputs()
        done = await outputs.publish(
            self.config_maps, body, name, data, seen=state.outputs_seen, reread=reread
        )
        state.outputs_seen = done.seen
        if done.problem is None:
            return outcome
        previous = self.status_model.model_validate(dict(before)).conditions
        generation = int((body.get("metadata") or {}).get("generation") or 0)
        outcome = unsynced(outcome, done.reason, done.problem, generation, before=previous)
        if done.reason == outputs.CONFIG_MAP_WRITE_FAILED:
            # With the error backoff, not at the next resync (a 409, a timeout, RBAC).
            outcome = retry_soon(
                outcome, self.reconciler.schedule.retry_delay(state.history.attempt)
            )
        return outcome

    def _resync(self, body: Mapping[str, Any], state: ResourceState, post: EventPoster) -> Resync:
        """The resource's resync interval; a bad annotation is told once per value."""
        resync = resync_of(body, self.reconciler.schedule.resync)
        if resync.problem and state.resync_warned != resync_annotation(body):
            post(EventRecord("Warning", EventReason.INVALID_RESYNC_INTERVAL, resync.problem))
            state.resync_warned = resync_annotation(body)
        return resync

    async def finalize(self, body: Mapping[str, Any], state: ResourceState) -> NotYet | None:
        """The custom resource is being deleted: delete (or orphan) the external resource.
        None once the finalizer may be released; else when to try again, and why."""
        if state.status is None:
            state.seed(body)
        assert state.status is not None
        mr = self.managed(body, state.status, state.marker)
        try:
            gone = await self.reconciler.finalize(mr)
        except (ExternalError, DependencyNotReady) as exc:
            delay = getattr(exc, "retry_after", None) or DELETE_RETRY_SECONDS
            return NotYet(f"cannot delete on the control plane yet: {exc}", delay, exc)
        if not gone:
            return NotYet("waiting for the control plane to finish deleting", DELETE_POLL_SECONDS)
        if self.releaser is not None:
            await self.releaser.release(mr)
        if self.on_gone is not None:
            self.on_gone(mr.key)
        return None

    async def hold(
        self,
        body: Mapping[str, Any],
        state: ResourceState,
        reason: Reason,
        message: str,
        cause: str | None = None,
    ) -> list[EventRecord]:
        """A deletion that waits says why (`reconcile.deletion`): the status, patched
        against the one the apiserver holds (nothing written when it says so already),
        and the Events worth posting."""
        if state.status is None:
            state.seed(body)
        assert state.status is not None
        # Only an object that carries our finalizer is held: none is added to it.
        state.finalizer = state.finalizer or has_finalizer(body)
        observed = state.settle_observed(body, time.monotonic(), self.has_id)
        current = self.status_model.model_validate(state.status)
        generation = int((body.get("metadata") or {}).get("generation") or 0)
        status, events = deletion.waiting(current, generation, reason, message, cause)
        write = ObjectWriter(self.sink, self.plural, body, state, observed)
        await write.publish(to_kube(status))
        return events

    async def hold_for(
        self, body: Mapping[str, Any], state: ResourceState, not_yet: NotYet
    ) -> list[EventRecord]:
        """A finalization that must wait: blocked by an error (`DeletionBlocked`, the
        error's reason on Synced), or, once it was held, the control plane deleting."""
        if not_yet.cause is not None:
            cause = str(getattr(not_yet.cause, "reason", "") or Reason.DEPENDENCY_NOT_READY)
            return await self.hold(body, state, Reason.DELETION_BLOCKED, not_yet.message, cause)
        if state.status is None:
            state.seed(body)
        if deletion.held(self.status_model.model_validate(state.status)):
            return await self.hold(body, state, Reason.DELETING, not_yet.message)
        return []


def managed_of(
    spec_model: type[SpecT],
    status_model: type[StatusT],
    body: Mapping[str, Any],
    status: Mapping[str, Any],
    marker: CreatePending | None = None,
) -> Managed[SpecT, StatusT]:
    """The snapshot a pass's reconciler sees (and `deployplane plan`'s): the object's
    marker counts while no id is recorded in the status (a recorded id supersedes it;
    it stays on the object)."""
    recorded = status_model.model_validate(dict(status)).external_id
    return to_managed(spec_model, status_model, body, status, None if recorded else marker)


def to_managed(
    spec_model: type[SpecT],
    status_model: type[StatusT],
    body: Mapping[str, Any],
    status: Mapping[str, Any],
    create_pending: CreatePending | None = None,
) -> Managed[SpecT, StatusT]:
    """A watched body -> the `Managed` snapshot the reconciler sees: the spec through the
    kind's pydantic model, the status through its status model."""
    meta = body.get("metadata") or {}
    return Managed(
        namespace=meta["namespace"],
        name=meta["name"],
        uid=meta.get("uid", ""),
        generation=int(meta.get("generation") or 0),
        spec=spec_model.model_validate(dict(body.get("spec") or {})),
        status=status_model.model_validate(dict(status)),
        resource_version=meta.get("resourceVersion"),
        create_pending=create_pending,
        approved_generation=approved_generation(body),
    )


def spec_error_message(exc: ValidationError) -> str:
    """A spec the model refuses, in the user's words, for the pass to stall on."""
    parts = []
    for err in exc.errors():
        # A missing field is reported under its first alias (snake_case); the user wrote
        # the custom resource in camelCase, so name the field as they would write it.
        loc = ".".join(camelize(p) if isinstance(p, str) else str(p) for p in err["loc"])
        parts.append(f"spec.{loc}: {err['msg']}")
    return "; ".join(parts)
