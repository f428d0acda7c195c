"""One resource's pass: reconcile, publish, say when to look again. Holds no Kopf code:
the layer above hands it bodies and an event poster, and a work queue
(`deployplane.reconcile.workqueue`) brings each resource back when the pass asked.

Why passes rather than handler retries: the wait between passes is the schedule's
decision (revision polls back off 2 s -> 30 s, errors back off on their own, a settled
resource resyncs every 10 min), a spec change must cut any wait short, and a pass that
changes nothing must write nothing to Kubernetes.

The create-pending marker (`deployplane.reconcile.marker`) lives on the object, not in
its status: the pass hands it to the reconciler in `Managed.create_pending` and writes
it for the reconciler (`_Writer.mark`/`unmark`), with our finalizer in the same merge
patch of the object before the create call, so it costs no write of its own. Once the
status the apiserver holds has the new id, the pass takes it off (`_Writer.publish`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import KW_ONLY, dataclass
from typing import Any, Final, Generic, Protocol

from pydantic import ValidationError

from deployplane.api.models import camelize
from deployplane.reconcile import outputs
from deployplane.reconcile.errors import ExternalError
from deployplane.reconcile.external import DependencyNotReady, Managed, SpecT
from deployplane.reconcile.marker import CREATE_PENDING_ANNOTATION, CreatePending
from deployplane.reconcile.outcome import EventRecord, Outcome, retry_soon, unsynced
from deployplane.reconcile.outputs import ConfigMapStore
from deployplane.reconcile.reconciler import Reconciler
from deployplane.reconcile.resync import Resync, resync_of
from deployplane.reconcile.resync import annotation_value as resync_annotation
from deployplane.reconcile.state import ECHO_WAIT_SECONDS, ResourceState, fingerprint, is_paused
from deployplane.reconcile.status import StatusT, to_kube
from deployplane.reconcile.statuspatch import apply_merge_patch, merge_patch

FINALIZER: Final = "deployplane.io/finalizer"
"""Ours, put on by the first write of the operator; Kopf's own (the same name in
earlier versions) is released the same way."""
DELETE_POLL_SECONDS: Final = 2.0
"""How soon to look again while the control plane is still deleting."""
DELETE_RETRY_SECONDS: Final = 10.0
"""How soon to try again when deleting failed and the service named no time."""


class StatusSink(Protocol):
    async def patch_status(
        self, plural: str, namespace: str, name: str, patch: Mapping[str, Any]
    ) -> bool: ...

    async def patch_object(
        self,
        plural: str,
        namespace: str,
        name: str,
        patch: Mapping[str, Any],
        *,
        add_finalizer: str | None = None,
        finalizers: list[str] | None = None,
        resource_version: str | None = None,
    ) -> bool:
        """Merge-patch the object; with `add_finalizer`, add it to `finalizers` (the
        list at `resource_version`) without ever dropping another's."""
        ...


class ResourceGone(DependencyNotReady):
    """The custom resource was deleted before the create call: nothing is created."""


EventPoster = Callable[[EventRecord], None]


def has_finalizer(body: Mapping[str, Any]) -> bool:
    return FINALIZER in ((body.get("metadata") or {}).get("finalizers") or ())


@dataclass(frozen=True)
class NotYet:
    """The finalizer may not be released yet: look again in `retry_after` seconds."""

    message: str
    retry_after: float
    cause: BaseException | None = None


def to_managed(
    spec_model: type[SpecT],
    status_model: type[StatusT],
    body: Mapping[str, Any],
    status: Mapping[str, Any],
    create_pending: CreatePending | None = None,
) -> Managed[SpecT, StatusT]:
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
    )


def spec_error_message(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors():
        # A missing field is reported under its first alias (snake_case); the user wrote
        # the custom resource in camelCase, so name the field as they would write it.
        loc = ".".join(camelize(p) if isinstance(p, str) else str(p) for p in err["loc"])
        parts.append(f"spec.{loc}: {err['msg']}")
    return "; ".join(parts)


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
        recorded in the status (a recorded id supersedes it, and the pass clears it)."""
        pending = None if self.has_id(status) else marker
        return to_managed(self.spec_model, self.status_model, body, status, pending)

    def has_id(self, status: Mapping[str, Any]) -> bool:
        return bool(self.status_model.model_validate(dict(status)).external_id)

    async def one_pass(
        self, body: Mapping[str, Any], state: ResourceState, *, post_event: EventPoster
    ) -> float | None:
        """Reconcile once and publish; return how long to wait before the next pass
        (None: not until something changes)."""
        if state.status is None:
            state.seed(body)
        assert state.status is not None
        state.visit.seen = fingerprint(body)
        state.finalizer = state.finalizer or has_finalizer(body)
        meta = body.get("metadata") or {}
        namespace, name = meta["namespace"], meta["name"]
        schedule = self.reconciler.schedule
        resync = self._resync(body, state, post_event)
        if is_paused(body):
            self.log.info("%s/%s is paused; not reconciling", namespace, name)
            return resync.seconds

        now = time.monotonic()
        observed = state.observed(body, now)
        if observed is not state.status and (
            self.has_id(observed) or not self.has_id(state.status)
        ):
            # The observed status is the truth (a second replica's write, say); but an id
            # this process recorded is never forgotten because a status was wiped by hand:
            # the pass reasons from what it wrote, and its write restores the rest.
            state.status = observed
        write = _Writer(self, body, state, observed)
        resync_due = schedule.begin(state.visit, now, resync.seconds)
        try:
            mr = self.managed(body, state.status, state.marker)
        except ValidationError as exc:
            generation = int(meta.get("generation") or 0)
            current = self.status_model.model_validate(state.status)
            outcome = self.reconciler.invalid_spec(current, generation, spec_error_message(exc))
        else:
            outcome = await self.reconciler.reconcile(
                mr, writes=write, attempt=state.visit.attempt, resync_due=resync_due
            )
        outcome = await self._outputs(body, state, outcome, write.observed, resync_due)
        await write.publish(to_kube(outcome.status))
        for event in outcome.events:
            post_event(event)
        if self.on_outcome is not None:
            self.on_outcome(f"{namespace}/{name}", outcome)
        schedule.end(state.visit, outcome.state)
        delay = outcome.next_pass(resync.seconds)
        self.log.debug(
            "%s/%s reconciled: %s, next pass in %s",
            namespace,
            name,
            outcome.state.value,
            "(never)" if delay is None else f"{delay:.1f}s",
        )
        return delay

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
            outcome = retry_soon(outcome, self.reconciler.schedule.retry_delay(state.visit.attempt))
        return outcome

    def _resync(self, body: Mapping[str, Any], state: ResourceState, post: EventPoster) -> Resync:
        """The resource's resync interval; a bad annotation is told once per value."""
        resync = resync_of(body, self.reconciler.schedule.resync)
        if resync.problem and state.resync_warned != resync_annotation(body):
            post(EventRecord("Warning", "InvalidResyncInterval", resync.problem))
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


class _Writer:
    """The pass's writes to one object: the reconciler's create-pending marker
    (`MarkerWriter`) and the publishing status patch.

    The marker goes on the object with our finalizer, in one merge patch, before the
    create call; a refused create takes it off. The finalizer goes on with the first
    write of the operator to the object, so every resource the operator acted on is
    finalized on deletion."""

    def __init__(
        self,
        loop: PassRunner[Any, Any],
        body: Mapping[str, Any],
        state: ResourceState,
        observed: Mapping[str, Any],
    ):
        self.loop, self.body, self.state = loop, body, state
        self.observed = observed
        """The status the apiserver holds (`ResourceState.observed`): what a patch is
        computed against, so a status edited or wiped by hand is repaired, and nothing
        is written when it already says what the pass concluded."""
        meta = body.get("metadata") or {}
        self.namespace, self.name = meta["namespace"], meta["name"]

    async def mark(self, marker: CreatePending) -> None:
        state = self.state
        annotations: dict[str, Any] = {}
        if state.marker is None or state.marker.key != marker.key or not state.marker_on_object:
            annotations[CREATE_PENDING_ANNOTATION] = marker.render()
        if (annotations or not state.finalizer) and not await self._patch_object(annotations):
            raise ResourceGone(f"{self.namespace}/{self.name} was deleted")
        state.marker, state.marker_on_object = marker, True

    async def unmark(self) -> None:
        """The marker comes off the object (a refused create, or a create recorded)."""
        state = self.state
        if state.marker is not None and state.marker_on_object:
            await self._patch_object({CREATE_PENDING_ANNOTATION: None})
        state.marker, state.marker_on_object = None, False

    async def publish(self, status: dict[str, Any]) -> None:
        """The pass's status, patched against the one the apiserver holds (a status
        edited or wiped by hand is repaired, an earlier version's status marker dropped);
        then, the create recorded (the id in that status), the marker comes off: it has
        said all it had to (Crossplane's create-succeeded). Never before: until the id
        is in the status, the marker is the only record that a create may have happened."""
        patch = merge_patch(dict(self.observed), status)
        if patch:
            await self.write_status(patch)
        if self.state.marker is not None and self.loop.has_id(self.observed):
            await self.unmark()

    async def write_status(self, status_patch: dict[str, Any]) -> None:
        """A status patch: the pass's publishing one, or a durable one of the reconciler
        (our finalizer first, if not on yet). Its status is announced as ours before it
        is sent: its watch event may come before its answer, and must ask for nothing."""
        state = self.state
        if not state.finalizer and not await self._patch_object({}):
            return  # nothing to publish on a deleted object
        after = apply_merge_patch(self.observed, status_patch)
        state.expect(self.observed, after, time.monotonic() + ECHO_WAIT_SECONDS)
        try:
            await self.loop.sink.patch_status(
                self.loop.plural, self.namespace, self.name, status_patch
            )
        except BaseException:
            state.not_written(after)
            raise
        self.observed = after
        state.written(dict(after))

    async def _patch_object(self, annotations: dict[str, Any]) -> bool:
        meta: dict[str, Any] = {}
        if annotations:
            meta["annotations"] = annotations
        body_meta = self.body.get("metadata") or {}
        # The finalizer goes on under the watched object's resourceVersion: a merge
        # patch replaces the whole list, and another controller's finalizer added since
        # must not be lost (the sink reads the object again on a conflict).
        patched = await self.loop.sink.patch_object(
            self.loop.plural,
            self.namespace,
            self.name,
            {"metadata": meta},
            add_finalizer=None if self.state.finalizer else FINALIZER,
            finalizers=list(body_meta.get("finalizers") or []),
            resource_version=body_meta.get("resourceVersion"),
        )
        self.state.finalizer = self.state.finalizer or patched
        return patched
