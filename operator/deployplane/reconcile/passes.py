"""One resource's pass: parse the body, reconcile, publish, say when to look again; and
its finalization on deletion. Holds no Kopf code: the layer above hands it bodies and an
event poster, and a work queue (`deployplane.reconcile.workqueue`) brings each resource
back when the pass asked.

Why passes rather than handler retries: the wait between passes is the schedule's
decision (revision polls back off 2 s -> 30 s, errors back off on their own, a settled
resource resyncs every 10 min), a spec change must cut any wait short, and a pass that
changes nothing must write nothing to Kubernetes.

What a pass leans on, each in its own module: the resource's memory between passes
(`state.py`), the body -> `Managed` parsing (`parse.py`), the pass's writes to the
object (`writer.py`: the create marker, our finalizer, the status patch), and
our finalizer's rules (`finalizer.py`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import KW_ONLY, dataclass
from typing import Any, Generic

from pydantic import ValidationError

from deployplane.reconcile import outputs
from deployplane.reconcile.errors import ExternalError
from deployplane.reconcile.external import DependencyNotReady, Managed, SpecT
from deployplane.reconcile.finalizer import DELETE_POLL_SECONDS, DELETE_RETRY_SECONDS, NotYet
from deployplane.reconcile.marker import CreatePending
from deployplane.reconcile.outcome import EventReason, EventRecord, Outcome, retry_soon, unsynced
from deployplane.reconcile.outputs import ConfigMapStore
from deployplane.reconcile.parse import spec_error_message, to_managed
from deployplane.reconcile.reconciler import Reconciler
from deployplane.reconcile.resync import Resync, resync_of
from deployplane.reconcile.resync import annotation_value as resync_annotation
from deployplane.reconcile.schedule import Result
from deployplane.reconcile.state import ResourceState, is_paused
from deployplane.reconcile.status import StatusT, to_kube
from deployplane.reconcile.writer import ObjectWriter, StatusSink

EventPoster = Callable[[EventRecord], None]


@dataclass
class PassRunner(Generic[SpecT, StatusT]):
    """Runs `Reconciler` for one kind; one `run()` per live custom resource."""

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

    def __post_init__(self) -> None:
        self.log = self.logger or logging.getLogger(f"deployplane.{self.plural}")

    def managed(
        self,
        body: Mapping[str, Any],
        status: Mapping[str, Any],
        marker: CreatePending | None = None,
    ) -> Managed[SpecT, StatusT]:
        """The snapshot the reconciler sees; the object's marker counts while no id is
        recorded in the status (a recorded id supersedes it; it stays on the object)."""
        pending = None if self.has_id(status) else marker
        return to_managed(self.spec_model, self.status_model, body, status, pending)

    def has_id(self, status: Mapping[str, Any]) -> bool:
        return bool(self.status_model.model_validate(dict(status)).external_id)

    async def one_pass(
        self, body: Mapping[str, Any], state: ResourceState, *, post_event: EventPoster
    ) -> Result:
        """Reconcile once and publish; the Result says when to come back (the
        outcome's decision, `Outcome.result`)."""
        state.begin_pass(body)
        assert state.status is not None
        meta = body.get("metadata") or {}
        namespace, name = meta["namespace"], meta["name"]
        schedule = self.reconciler.schedule
        resync = self._resync(body, state, post_event)
        if is_paused(body):
            self.log.info("%s/%s is paused; not reconciling", namespace, name)
            return Result(resync.seconds)  # looked at again as a settled resource is

        now = time.monotonic()
        observed = state.settle_observed(body, now, self.has_id)
        write = ObjectWriter(self.sink, self.plural, body, state, observed)
        resync_due = schedule.begin(state.history, now, resync.seconds)
        try:
            mr = self.managed(body, state.status, state.marker)
        except ValidationError as exc:
            generation = int(meta.get("generation") or 0)
            current = self.status_model.model_validate(state.status)
            outcome = self.reconciler.invalid_spec(current, generation, spec_error_message(exc))
        else:
            outcome = await self.reconciler.reconcile(
                mr, writes=write, attempt=state.history.attempt, resync_due=resync_due
            )
        outcome = await self._outputs(body, state, outcome, write.observed, resync_due)
        await write.publish(to_kube(outcome.status))
        for event in outcome.events:
            post_event(event)
        if self.on_outcome is not None:
            self.on_outcome(f"{namespace}/{name}", outcome)
        schedule.end(state.history, outcome.state)
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
        if self.on_gone is not None:
            self.on_gone(mr.key)
        return None
