"""Ready pods through a change, as a watch sees them: a thread watches the pods of a
label selector and, after every event, counts those Ready and not being deleted, so a
test can say whether there was a moment without one (a rolling restart keeps one; a
`Recreate` does not). It only records; the test asserts.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any

from kubernetes import client, watch


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


class WatchedPods(AbstractContextManager["WatchedPods"]):
    """`with WatchedPods(api_factory, namespace, selector) as watched:` ... then read
    `watched.timeline`. The pods are listed on entry; a thread with a client of its own
    (`api_factory`) watches from there until the exit (short watches, each resumed where
    the last one ended)."""

    def __init__(
        self, api_factory: Callable[[], client.ApiClient], namespace: str, selector: str
    ) -> None:
        self.timeline = ReadyTimeline()
        self._api = api_factory()
        self._core = client.CoreV1Api(self._api)
        self._where = (namespace, selector)
        self._version = ""
        self._stopping = threading.Event()
        self._failure: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="pod-watch", daemon=True)

    def _run(self) -> None:
        namespace, selector = self._where
        try:
            while not self._stopping.is_set():
                for event in watch.Watch().stream(
                    self._core.list_namespaced_pod,
                    namespace,
                    label_selector=selector,
                    resource_version=self._version,
                    timeout_seconds=2,
                ):
                    pod = event["object"]
                    self._version = pod.metadata.resource_version
                    self.timeline.record(event["type"], pod)
        except BaseException as exc:  # reported by __exit__, in the test's thread
            self._failure = exc

    def __enter__(self) -> WatchedPods:
        namespace, selector = self._where
        listed = self._core.list_namespaced_pod(namespace, label_selector=selector)
        for pod in listed.items:
            self.timeline.record("ADDED", pod)
        self._version = listed.metadata.resource_version
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stopping.set()
        self._thread.join(timeout=30)
        self._api.close()
        if self._failure is not None and exc_info[0] is None:
            raise AssertionError(f"the pod watch failed: {self._failure!r}")
