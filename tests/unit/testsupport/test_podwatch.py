"""tests/support/podwatch.py's timeline: a rolling restart keeps a serving pod, a
Recreate does not, and a pod on its way out no longer serves."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from tests.support.podwatch import ReadyTimeline


def pod(uid: str, *, ready: bool, deleting: bool = False) -> Any:
    condition = SimpleNamespace(type="Ready", status="True" if ready else "False")
    return SimpleNamespace(
        metadata=SimpleNamespace(
            uid=uid, name=f"server-{uid}", deletion_timestamp=deleting or None
        ),
        status=SimpleNamespace(conditions=[condition]),
    )


def test_a_rolling_restart_keeps_a_serving_pod() -> None:
    timeline = ReadyTimeline()
    timeline.record("ADDED", pod("old", ready=True))
    timeline.record("ADDED", pod("new", ready=False))
    timeline.record("MODIFIED", pod("new", ready=True))
    timeline.record("MODIFIED", pod("old", ready=True, deleting=True))
    timeline.record("DELETED", pod("old", ready=False))
    assert timeline.fewest == 1
    assert timeline.counts[-1] == 1


def test_a_recreate_has_a_moment_without_one() -> None:
    timeline = ReadyTimeline()
    timeline.record("ADDED", pod("old", ready=True))
    timeline.record("MODIFIED", pod("old", ready=True, deleting=True))
    timeline.record("DELETED", pod("old", ready=False))
    timeline.record("ADDED", pod("new", ready=False))
    timeline.record("MODIFIED", pod("new", ready=True))
    assert timeline.fewest == 0
    assert timeline.counts[-1] == 1
