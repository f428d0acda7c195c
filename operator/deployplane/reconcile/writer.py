"""A pass's writes to one object: the create marker the reconciler asks for
(`MarkerWriter`), our finalizer, and the status patch that publishes the pass.

The marker (the external-name annotation, `reconcile.marker`) goes on the object with
our finalizer, in one merge patch, before the first create call, so it costs no write of
its own; it stays (a recorded id supersedes it), and only a refused create takes it off.
So a created resource costs three writes: that patch, the status with the id and the
first conditions, the status that says Ready. The finalizer goes on with the first
write of the operator to the object, so every resource the operator acted on is
finalized on deletion. Every status write is announced to the resource's state before
it is sent (`ResourceState.expect`): its watch event may come before its answer, and
must ask for nothing.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any, Protocol

from deployplane.reconcile.conditions import Reason
from deployplane.reconcile.external import DependencyNotReady
from deployplane.reconcile.finalizer import FINALIZER
from deployplane.reconcile.marker import (
    CREATE_PENDING_ANNOTATION,
    EXTERNAL_NAME_ANNOTATION,
    CreatePending,
    read_marker,
    same_marker,
)
from deployplane.reconcile.mergepatch import apply_merge_patch, merge_patch
from deployplane.reconcile.resourcestate import ECHO_WAIT_SECONDS, ResourceState


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
        guard: Callable[[Mapping[str, Any]], bool] | None = None,
    ) -> bool:
        """Merge-patch the object; with `add_finalizer`, add it to `finalizers` (the
        list at `resource_version`) without ever dropping another's; with `guard`, only
        if the object passes it. False if the object is gone or fails `guard`."""
        ...


class ResourceGone(DependencyNotReady):
    """The custom resource was deleted before the create call: nothing is created."""


class MarkedMeanwhile(DependencyNotReady):
    """The object carries another create marker than the pass knew, written by another
    writer since (another replica of the operator finishing its passes while this one
    takes over, or a marker set by hand): nothing is created, and the next pass looks
    the resource up under the object's marker."""

    reason = Reason.CREATE_PENDING


class _MarkerGuard:
    """A test of the object: it carries the marker this process knows (`expected`),
    or none if it knows none. Records the marker it found when the test fails."""

    def __init__(self, expected: CreatePending | None) -> None:
        self.expected = expected
        self.found: CreatePending | None = None
        self.failed = False

    def __call__(self, obj: Mapping[str, Any]) -> bool:
        marker = read_marker(obj)
        if same_marker(marker, self.expected):
            return True
        self.found, self.failed = marker, True
        return False


class ObjectWriter:
    """The writes of one pass to one object (the reconciler's `PassWriter`)."""

    def __init__(
        self,
        sink: StatusSink,
        plural: str,
        body: Mapping[str, Any],
        state: ResourceState,
        observed: Mapping[str, Any],
    ):
        self.sink, self.plural, self.body, self.state = sink, plural, body, state
        self.observed = observed
        """The status the apiserver holds (`ResourceState.observed`): what a patch is
        computed against, so a status edited or wiped by hand is repaired, and nothing
        is written when it already says what the pass concluded."""
        meta = body.get("metadata") or {}
        self.namespace, self.name = meta["namespace"], meta["name"]

    async def mark(self, marker: CreatePending) -> None:
        """The marker on the object, with the time of the first create call under its
        key (a marker already there under the same key keeps its time). Written only
        over the marker this process knows (`_write_marker`)."""
        state = self.state
        annotations: dict[str, Any] = {}
        if state.marker is not None and state.marker.key == marker.key:
            marker = replace(marker, requested_at=state.marker.requested_at)
        else:
            marker = replace(marker, requested_at=datetime.now(UTC).replace(microsecond=0))
            annotations[EXTERNAL_NAME_ANNOTATION] = marker.render()
            annotations[CREATE_PENDING_ANNOTATION] = marker.render_requested_at()
        if annotations or not state.finalizer:
            await self._write_marker(annotations)
        state.marker = marker

    async def unmark(self) -> None:
        """The marker comes off the object: a refused create (the key is someone
        else's, and no later pass may adopt it by the marker). Only the marker this
        process knows: another one is another writer's create, which the next pass
        looks up (`MarkedMeanwhile`)."""
        state = self.state
        if state.marker is not None:
            await self._write_marker(
                {EXTERNAL_NAME_ANNOTATION: None, CREATE_PENDING_ANNOTATION: None}
            )
        state.marker = None

    async def _write_marker(self, annotations: dict[str, Any]) -> None:
        """The marker's annotations patched only over the marker this process knows
        (`ResourceState.marker`): under the version of the object the pass read when it
        carries that marker, else after reading it again. Two replicas may both act on
        one resource for a moment (a deleted pod finishes its passes in its grace period
        while its successor begins); a marker overwritten or removed by the one whose
        watch is behind would make the other's create look like somebody else's."""
        state = self.state
        guard = _MarkerGuard(state.marker)
        if guard(self.body):
            patched = await self._patch_object(annotations, guard=guard)
        else:
            # The pass's body shows another marker (or none) than this process knows:
            # its version is no precondition for a write over the known one.
            guard.failed = False
            patched = await self._patch_object(annotations, guard=guard, fresh=True)
        if guard.failed:
            state.marker = guard.found
            found = "none" if guard.found is None else repr(guard.found.key)
            raise MarkedMeanwhile(
                f"{self.namespace}/{self.name}: its create marker changed meanwhile "
                f"(now {found}); looking the resource up under it before creating"
            )
        if not patched:
            raise ResourceGone(f"{self.namespace}/{self.name} was deleted")

    async def publish(self, status: dict[str, Any]) -> None:
        """The pass's status, patched against the one the apiserver holds (a status
        edited or wiped by hand is repaired). The marker stays: once the id is in the
        status it says nothing more, and taking it off would cost a write."""
        patch = merge_patch(dict(self.observed), status)
        if patch:
            await self.write_status(patch)

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
            await self.sink.patch_status(self.plural, self.namespace, self.name, status_patch)
        except BaseException:
            state.not_written(after)
            raise
        self.observed = after
        state.written(dict(after))

    async def _patch_object(
        self,
        annotations: dict[str, Any],
        *,
        guard: Callable[[Mapping[str, Any]], bool] | None = None,
        fresh: bool = False,
    ) -> bool:
        """`fresh`: the object is read first (with `guard`), its version the
        precondition, rather than the version of the pass's body."""
        meta: dict[str, Any] = {}
        if annotations:
            meta["annotations"] = annotations
        body_meta = self.body.get("metadata") or {}
        # The finalizer goes on under the watched object's resourceVersion: a merge
        # patch replaces the whole list, and another controller's finalizer added since
        # must not be lost (the sink reads the object again on a conflict).
        patched = await self.sink.patch_object(
            self.plural,
            self.namespace,
            self.name,
            {"metadata": meta},
            add_finalizer=None if self.state.finalizer else FINALIZER,
            finalizers=list(body_meta.get("finalizers") or []),
            resource_version=None if fresh else body_meta.get("resourceVersion"),
            guard=guard,
        )
        self.state.finalizer = self.state.finalizer or patched
        return patched
