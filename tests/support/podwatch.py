"""Ready pods through a change, as a watch sees them: a thread watches the pods of a
label selector and, after every event, counts those Ready and not being deleted, so a
test can say whether there was a moment without one (a rolling restart keeps one; a
`Recreate` does not). It only records; the test asserts.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kubernetes import client
from tests.support.resumingwatch import ResumingWatch


def is_serving(pod: Any) -> bool:
    """Ready, and not on its way out (a deleted pod leaves its Service at once)."""
    if pod.metadata.deletion_timestamp is not None:
        return False
    conditions = pod.status.conditions or []
    return any(c.type == "Ready" and c.status == "True" for c in conditions)


@dataclass
class ReadyTimeline:
    """The pods seen (by uid) and the count of serving ones after each event."""

    serving: dict[str, bool] = field(default_factory=dict)
    counts: list[int] = field(default_factory=list)
    names: dict[str, str] = field(default_factory=dict)  # uid -> pod name

    def record(self, kind: str, pod: Any) -> None:
        uid = str(pod.metadata.uid)
        self.names[uid] = str(pod.metadata.name)
        self.serving[uid] = kind != "DELETED" and is_serving(pod)
        self.counts.append(sum(self.serving.values()))

    @property
    def fewest(self) -> int:
        return min(self.counts, default=0)


class WatchedPods(ResumingWatch):
    """`with WatchedPods(api_factory, namespace, selector) as watched:` ... then read
    `watched.timeline`. The pods are listed on entry; a thread with a client of its own
    (`api_factory`) watches from there until the exit (`tests/support/resumingwatch.py`)."""

    stream_seconds = 2

    def __init__(
        self, api_factory: Callable[[], client.ApiClient], namespace: str, selector: str
    ) -> None:
        super().__init__("pods")
        self.timeline = ReadyTimeline()
        self._api = api_factory()
        self._core = client.CoreV1Api(self._api)
        self._where = (namespace, selector)

    def _list(self) -> str:
        namespace, selector = self._where
        listed = self._core.list_namespaced_pod(namespace, label_selector=selector)
        for pod in listed.items:
            self.timeline.record("ADDED", pod)
        return str(listed.metadata.resource_version)

    def _watched(self) -> tuple[Callable[..., Any], tuple[Any, ...], dict[str, Any]]:
        namespace, selector = self._where
        return self._core.list_namespaced_pod, (namespace,), {"label_selector": selector}

    def _record(self, kind: str, obj: Any) -> str:
        self.timeline.record(kind, obj)
        return str(obj.metadata.resource_version)

    def _close(self) -> None:
        self._api.close()
