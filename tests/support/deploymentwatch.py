"""Every state a Deployment passes through, seen by a watch (not by sampling): what a
test asserts on when something must never happen during a rollout (the replica count
set below what an autoscaler holds).

The watch runs in a thread from the resourceVersion the Deployment has when the context
is entered, so no change between that read and the watch's start is missed; each
stream ends after a few seconds and the next one goes on from the last version seen,
until the context exits.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from types import TracebackType
from typing import Any

from kubernetes import client, watch

STREAM_SECONDS = 5


@dataclass(frozen=True)
class State:
    """One version of the Deployment: its wanted count and how its pods stand."""

    resource_version: str
    generation: int
    replicas: int | None  # spec.replicas
    current: int  # status.replicas: pods of every ReplicaSet
    updated: int
    available: int
    image: str

    @classmethod
    def of(cls, deployment: Any) -> State:
        status = deployment.status
        return cls(
            resource_version=deployment.metadata.resource_version,
            generation=deployment.metadata.generation,
            replicas=deployment.spec.replicas,
            current=(status and status.replicas) or 0,
            updated=(status and status.updated_replicas) or 0,
            available=(status and status.available_replicas) or 0,
            image=deployment.spec.template.spec.containers[0].image,
        )


class DeploymentWatch:
    """`states`: the Deployment as read when entered, then every version the watch saw."""

    def __init__(self, api: client.ApiClient, namespace: str, name: str) -> None:
        self.apps = client.AppsV1Api(api)
        self.namespace = namespace
        self.name = name
        self.states: list[State] = []
        self.errors: list[BaseException] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"watch-{name}", daemon=True)

    def __enter__(self) -> DeploymentWatch:
        first = self.apps.read_namespaced_deployment(self.name, self.namespace)
        self.states.append(State.of(first))
        self._thread.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self._stop.set()
        self._thread.join(timeout=STREAM_SECONDS * 3)
        if kind is None:
            assert not self._thread.is_alive(), "the watch did not stop"
            assert not self.errors, self.errors

    def _run(self) -> None:
        version = self.states[0].resource_version
        try:
            while not self._stop.is_set():
                stream = watch.Watch().stream(
                    self.apps.list_namespaced_deployment,
                    self.namespace,
                    field_selector=f"metadata.name={self.name}",
                    resource_version=version,
                    timeout_seconds=STREAM_SECONDS,
                    allow_watch_bookmarks=False,
                )
                for event in stream:
                    if event["type"] in ("ADDED", "MODIFIED"):
                        state = State.of(event["object"])
                        self.states.append(state)
                        version = state.resource_version
                    if self._stop.is_set():
                        break
        except BaseException as exc:  # said by __exit__, in the test's thread
            self.errors.append(exc)
