"""One resource's reconcile loop, run by a daemon of the Kopf layer: reconcile, publish,
wait, repeat. Holds no Kopf code: the layer above hands it bodies and an event poster.

Why a loop per resource rather than handler retries: the wait between passes is the
schedule's decision (revision polls back off 2 s -> 30 s, errors back off on their own,
a settled resource resyncs every 10 min), a spec change must cut any wait short, and a
pass that changes nothing must write nothing to Kubernetes.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import KW_ONLY, dataclass, field
from typing import Any, Final, Generic, Protocol

from pydantic import ValidationError

from deployplane.api import errors
from deployplane.api.models import camelize
from deployplane.reconcile.external import DependencyNotReady, Managed, SpecT
from deployplane.reconcile.outcome import EventRecord, Outcome
from deployplane.reconcile.reconciler import Reconciler
from deployplane.reconcile.schedule import Visit
from deployplane.reconcile.status import StatusT, to_kube
from deployplane.reconcile.statuspatch import apply_merge_patch, merge_patch

PAUSED_ANNOTATION: Final = "deployplane.io/paused"
DELETE_POLL_SECONDS: Final = 2.0
"""How soon to look again while the control plane is still deleting."""
DELETE_RETRY_SECONDS: Final = 10.0
"""How soon to try again when deleting failed and the service named no time."""


class StatusSink(Protocol):
    async def patch_status(
        self, plural: str, namespace: str, name: str, patch: Mapping[str, Any]
    ) -> bool: ...


EventPoster = Callable[[EventRecord], None]


@dataclass
class ResourceState:
    """Per-resource memory, kept in the resource's Kopf memo (never module globals)."""

    wake: asyncio.Event = field(default_factory=asyncio.Event)
    status: dict[str, Any] | None = None
    """What this operator last wrote: the watch stream may lag behind our own writes, and
    a stale status (say, without the new deployment id) must never drive a decision."""
    visit: Visit = field(default_factory=Visit)

    def poke_if_changed(self, body: Mapping[str, Any]) -> None:
        """Wake the loop when the spec or the pause annotation changed."""
        if self.visit.changed(_fingerprint(body)):
            self.wake.set()


@dataclass(frozen=True)
class NotYet:
    """The finalizer may not be released yet: look again in `retry_after` seconds."""

    message: str
    retry_after: float
    cause: BaseException | None = None


def is_paused(body: Mapping[str, Any]) -> bool:
    annotations = (body.get("metadata") or {}).get("annotations") or {}
    return str(annotations.get(PAUSED_ANNOTATION, "")).lower() == "true"


def _fingerprint(body: Mapping[str, Any]) -> tuple[int, bool]:
    return (int((body.get("metadata") or {}).get("generation") or 0), is_paused(body))


def to_managed(
    spec_model: type[SpecT],
    status_model: type[StatusT],
    body: Mapping[str, Any],
    status: Mapping[str, Any],
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
class ResourceLoop(Generic[SpecT, StatusT]):
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

    def __post_init__(self) -> None:
        self.log = self.logger or logging.getLogger(f"deployplane.{self.plural}")

    def managed(
        self, body: Mapping[str, Any], status: Mapping[str, Any]
    ) -> Managed[SpecT, StatusT]:
        return to_managed(self.spec_model, self.status_model, body, status)

    async def run(
        self,
        body: Mapping[str, Any],
        state: ResourceState,
        *,
        should_stop: Callable[[], bool],
        post_event: EventPoster,
    ) -> None:
        if state.status is None:
            state.status = dict(body.get("status") or {})
        while not should_stop():
            delay = await self.one_pass(body, state, post_event=post_event)
            if should_stop():
                return
            state.wake.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(state.wake.wait(), timeout=delay)

    async def one_pass(
        self, body: Mapping[str, Any], state: ResourceState, *, post_event: EventPoster
    ) -> float:
        """Reconcile once and publish; return how long to wait before the next pass."""
        assert state.status is not None
        state.visit.seen = _fingerprint(body)
        meta = body.get("metadata") or {}
        namespace, name = meta["namespace"], meta["name"]
        schedule = self.reconciler.schedule
        if is_paused(body):
            self.log.info("%s/%s is paused; not reconciling", namespace, name)
            return schedule.resync

        async def write_status(patch: dict[str, Any]) -> None:
            assert state.status is not None
            await self.sink.patch_status(self.plural, namespace, name, patch)
            state.status = apply_merge_patch(state.status, patch)

        resync_due = schedule.begin(state.visit, time.monotonic())
        try:
            mr = self.managed(body, state.status)
        except ValidationError as exc:
            generation = int(meta.get("generation") or 0)
            current = self.status_model.model_validate(state.status)
            outcome = self.reconciler.invalid_spec(current, generation, spec_error_message(exc))
        else:
            outcome = await self.reconciler.reconcile(
                mr, write_status=write_status, attempt=state.visit.attempt, resync_due=resync_due
            )
        patch = merge_patch(state.status, to_kube(outcome.status))
        if patch:
            await write_status(patch)
        for event in outcome.events:
            post_event(event)
        if self.on_outcome is not None:
            self.on_outcome(f"{namespace}/{name}", outcome)
        schedule.end(state.visit, outcome.state)
        self.log.debug(
            "%s/%s reconciled: %s, next pass in %.1fs",
            namespace,
            name,
            outcome.state.value,
            outcome.requeue_after,
        )
        return outcome.requeue_after

    async def finalize(self, body: Mapping[str, Any], state: ResourceState) -> NotYet | None:
        """The custom resource is being deleted: delete (or orphan) the external resource.
        None once the finalizer may be released; else when to try again, and why."""
        status = state.status if state.status is not None else dict(body.get("status") or {})
        mr = self.managed(body, status)
        try:
            gone = await self.reconciler.finalize(mr)
        except (errors.ControlPlaneError, DependencyNotReady) as exc:
            delay = getattr(exc, "retry_after", None) or DELETE_RETRY_SECONDS
            return NotYet(f"cannot delete on the control plane yet: {exc}", delay, exc)
        if not gone:
            return NotYet("waiting for the control plane to finish deleting", DELETE_POLL_SECONDS)
        if self.on_gone is not None:
            self.on_gone(mr.key)
        return None
