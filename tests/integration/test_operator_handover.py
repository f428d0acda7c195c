"""Two replicas of the operator acting on one resource for a moment, as in a handover:
the deleted pod finishes the passes it had begun during its grace period while its
successor, whose watch may still show the object as listed before the first one's
writes, begins its own. Against the emulator app in process, Kubernetes faked.
"""
# ruff: noqa: F811  (the harness fixture, imported by name, is a parameter here)

from __future__ import annotations

import copy
from typing import Any

from tests.support.reconcile_harness import (  # noqa: F401  (harness: a fixture)
    NS,
    Harness,
    condition,
    cr,
    docker_spec,
    harness,
    settle,
)

from deployplane.reconcile.marker import CREATE_PENDING_ANNOTATION, EXTERNAL_NAME_ANNOTATION
from deployplane.reconcile.mergepatch import apply_merge_patch
from deployplane.reconcile.resourcestate import ResourceState


def stored(h: Harness, listed: dict[str, Any]) -> dict[str, Any]:
    """The object as the apiserver holds it now: the listed body, the object patches
    made since, and the status."""
    key = (NS, "agentdeployments", listed["metadata"]["name"])
    now = apply_merge_patch(copy.deepcopy(listed), h.kube.objects.get(key, {}))
    now["status"] = copy.deepcopy(h.kube.statuses.get(key, {}))
    return now


async def test_a_successor_behind_the_first_replicas_create_keeps_its_marker_and_adopts(
    harness: Harness,
) -> None:
    """The first replica marks and creates; the successor's pass over the object as it
    was listed (no marker, no id) finds another marker on the object: it creates
    nothing, overwrites nothing, and its next pass adopts the first one's deployment.
    The marker stays the first replica's, its time and all."""
    first, _ = harness.runners()
    successor, _ = harness.runners()
    listed = cr("burst", docker_spec())
    await first.one_pass(copy.deepcopy(listed), ResourceState(), post_event=harness.events.append)
    marked = stored(harness, listed)["metadata"]["annotations"]
    assert marked[EXTERNAL_NAME_ANNOTATION] == "burst"

    behind = ResourceState()
    await successor.one_pass(copy.deepcopy(listed), behind, post_event=harness.events.append)
    assert condition(behind, "Synced")["reason"] == "CreatePending"
    assert stored(harness, listed)["metadata"]["annotations"] == marked
    assert [c[0] for c in harness.calls].count("POST") == 1

    await settle(successor, stored(harness, listed), behind, harness)
    assert condition(behind, "Ready")["status"] == "True"
    assert len(await harness.deployments_named("burst")) == 1
    assert [c[0] for c in harness.calls].count("POST") == 1
    kept = stored(harness, listed)["metadata"]["annotations"]
    assert kept[EXTERNAL_NAME_ANNOTATION] == "burst"
    assert kept[CREATE_PENDING_ANNOTATION] == marked[CREATE_PENDING_ANNOTATION]


async def test_a_successor_behind_a_marker_whose_create_is_not_made_yet_creates_once(
    harness: Harness,
) -> None:
    """The first replica marked the object and was stopped before its create call: the
    successor, behind it, creates nothing on that pass, then creates under the marker's
    key once, keeping the marker's time."""
    listed = cr("halfway", docker_spec())
    marker = {
        EXTERNAL_NAME_ANNOTATION: "halfway",
        CREATE_PENDING_ANNOTATION: "2026-12-06T10:00:00Z",
    }
    harness.kube.objects[(NS, "agentdeployments", "halfway")] = {
        "metadata": {"annotations": marker}
    }
    successor, _ = harness.runners()
    behind = ResourceState()
    await successor.one_pass(copy.deepcopy(listed), behind, post_event=harness.events.append)
    assert condition(behind, "Synced")["reason"] == "CreatePending"
    assert [c[0] for c in harness.calls].count("POST") == 0

    await settle(successor, stored(harness, listed), behind, harness)
    assert condition(behind, "Ready")["status"] == "True"
    assert len(await harness.deployments_named("halfway")) == 1
    assert stored(harness, listed)["metadata"]["annotations"] == marker
