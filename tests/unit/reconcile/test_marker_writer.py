"""The create marker is written only over the marker this process knows: another one
on the object is another writer's create (a second replica for a moment, or a marker
set by hand), which the pass neither overwrites nor takes off."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from tests.support.fakekube import FakeKube

from deployplane.reconcile.marker import (
    CREATE_PENDING_ANNOTATION,
    EXTERNAL_NAME_ANNOTATION,
    CreatePending,
)
from deployplane.reconcile.resourcestate import ResourceState
from deployplane.reconcile.writer import MarkedMeanwhile, ObjectWriter

NS, NAME = "team-a", "agent"
KEY = (NS, "agentdeployments", NAME)
THEIRS = {EXTERNAL_NAME_ANNOTATION: "agent", CREATE_PENDING_ANNOTATION: "2026-12-06T10:00:00Z"}


def body(annotations: dict[str, str] | None = None) -> dict[str, Any]:
    meta = {"namespace": NS, "name": NAME, "resourceVersion": "3"}
    return {"metadata": {**meta, "annotations": dict(annotations or {})}}


def writer(kube: FakeKube, state: ResourceState, seen: dict[str, Any]) -> ObjectWriter:
    state.seed(seen)
    return ObjectWriter(kube, "agentdeployments", seen, state, {})


async def test_a_marker_put_on_meanwhile_is_neither_overwritten_nor_created_under() -> None:
    kube = FakeKube()
    kube.objects[KEY] = {"metadata": {"annotations": dict(THEIRS)}}
    state = ResourceState()
    with pytest.raises(MarkedMeanwhile, match="'agent'"):
        await writer(kube, state, body()).mark(CreatePending("agent"))
    assert kube.object_writes == []
    assert state.marker == CreatePending(
        "agent", requested_at=datetime(2026, 12, 6, 10, tzinfo=UTC)
    )


async def test_a_refused_create_takes_off_only_the_marker_this_process_wrote() -> None:
    kube = FakeKube()
    kube.objects[KEY] = {"metadata": {"annotations": dict(THEIRS)}}
    state = ResourceState()
    objects = writer(kube, state, body())
    state.marker = CreatePending("agent", requested_at=datetime(2026, 12, 6, 11, tzinfo=UTC))
    with pytest.raises(MarkedMeanwhile):
        await objects.unmark()
    assert kube.object_writes == []
    assert kube.objects[KEY]["metadata"]["annotations"] == THEIRS


async def test_a_body_behind_this_processs_own_marker_is_read_again_not_refused() -> None:
    """The pass's body does not show the marker this process wrote yet (its watch
    event not come): the object, read again, carries it, so the write goes on."""
    kube = FakeKube()
    ours = {EXTERNAL_NAME_ANNOTATION: "old", CREATE_PENDING_ANNOTATION: "2026-12-06T09:00:00Z"}
    kube.objects[KEY] = {"metadata": {"annotations": dict(ours), "finalizers": ["x"]}}
    state = ResourceState()
    objects = writer(kube, state, body())
    state.marker = CreatePending("old", requested_at=datetime(2026, 12, 6, 9, tzinfo=UTC))
    state.finalizer = True
    await objects.mark(CreatePending("new"))
    assert kube.objects[KEY]["metadata"]["annotations"][EXTERNAL_NAME_ANNOTATION] == "new"
