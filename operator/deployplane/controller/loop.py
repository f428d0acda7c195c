"""One resource's reconcile loop, run by a Kopf daemon: reconcile, publish, wait, repeat.

Why a loop per resource rather than handler retries: the wait between passes is the
reconciler's decision (revision polls back off 2 s -> 30 s, errors back off on their
own, a settled resource resyncs every 10 min), a spec change must cut any wait short,
and a pass that changes nothing must write nothing to Kubernetes.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, Protocol

from pydantic import ValidationError

from deployplane.api.models import camelize
from deployplane.controller.statuspatch import apply_merge_patch, merge_patch
from deployplane.crd.specs import PAUSED_ANNOTATION
from deployplane.reconcile.external import Managed, SpecT
from deployplane.reconcile.reconciler import EventRecord, Outcome, Reconciler


class StatusSink(Protocol):
    async def patch_status(
        self, plural: str, namespace: str, name: str, patch: Mapping[str, Any]
    ) -> bool: ...


EventPoster = Callable[[EventRecord], None]


@dataclass
class ResourceState:
    """Per-resource memory, kept in the resource's Kopf memo (never module globals)."""

    wake: asyncio.Event = field(default_factory=asyncio.Event)
    seen: tuple[int, bool] | None = None
    status: dict[str, Any] | None = None
    """What this operator last wrote: the watch stream may lag behind our own writes, and
    a stale status (say, without the new deployment id) must never drive a decision."""
    attempt: int = 0
    last_full: float = -math.inf

    def poke_if_changed(self, body: Mapping[str, Any]) -> None:
        """Wake the loop when the spec or the pause annotation changed."""
        if self.seen is not None and _fingerprint(body) != self.seen:
            self.wake.set()


def is_paused(body: Mapping[str, Any]) -> bool:
    annotations = (body.get("metadata") or {}).get("annotations") or {}
    return str(annotations.get(PAUSED_ANNOTATION, "")).lower() == "true"


def _fingerprint(body: Mapping[str, Any]) -> tuple[int, bool]:
    return (int((body.get("metadata") or {}).get("generation") or 0), is_paused(body))


def to_managed(
    spec_model: type[SpecT], body: Mapping[str, Any], status: Mapping[str, Any]
) -> Managed[SpecT]:
    meta = body.get("metadata") or {}
    return Managed(
        namespace=meta["namespace"],
        name=meta["name"],
        uid=meta.get("uid", ""),
        generation=int(meta.get("generation") or 0),
        spec=spec_model.model_validate(dict(body.get("spec") or {})),
        status=status,
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


class ResourceLoop(Generic[SpecT]):
    """Runs `Reconciler` for one kind; one `run()` per live custom resource."""

    def __init__(
        self,
        reconciler: Reconciler[SpecT],
        spec_model: type[SpecT],
        plural: str,
        sink: StatusSink,
        logger: logging.Logger | None = None,
        on_outcome: Callable[[str, Outcome], None] | None = None,
    ) -> None:
        self.on_outcome = on_outcome
        self.reconciler = reconciler
        self.spec_model = spec_model
        self.plural = plural
        self.sink = sink
        self.log = logger or logging.getLogger(f"deployplane.{plural}")

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
        state.seen = _fingerprint(body)
        meta = body.get("metadata") or {}
        namespace, name = meta["namespace"], meta["name"]
        timing = self.reconciler.timing
        if is_paused(body):
            self.log.info("%s/%s is paused; not reconciling", namespace, name)
            return timing.resync

        async def write_status(patch: dict[str, Any]) -> None:
            assert state.status is not None
            await self.sink.patch_status(self.plural, namespace, name, patch)
            state.status = apply_merge_patch(state.status, patch)

        now = time.monotonic()
        resync_due = now - state.last_full >= timing.resync
        try:
            mr = to_managed(self.spec_model, body, state.status)
        except ValidationError as exc:
            generation = int(meta.get("generation") or 0)
            outcome: Outcome = self.reconciler.invalid_spec(
                state.status, generation, spec_error_message(exc)
            )
        else:
            outcome = await self.reconciler.reconcile(
                mr, write_status=write_status, attempt=state.attempt, resync_due=resync_due
            )
        if resync_due:
            state.last_full = now
        patch = merge_patch(state.status, outcome.status)
        if patch:
            await write_status(patch)
        for event in outcome.events:
            post_event(event)
        if self.on_outcome is not None:
            self.on_outcome(f"{namespace}/{name}", outcome)
        state.attempt = 0 if outcome.settled else state.attempt + 1
        self.log.debug(
            "%s/%s reconciled: settled=%s, next pass in %.1fs",
            namespace,
            name,
            outcome.settled,
            outcome.requeue_after,
        )
        return outcome.requeue_after
