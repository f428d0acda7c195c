"""Every state a Deployment passes through, seen by a watch (not by sampling): what a
test asserts on when something must never happen during a rollout (the replica count
set below what an autoscaler holds).

The watch runs in a thread from the resourceVersion the Deployment has when the context
is entered until it exits (`tests/support/resumingwatch.py`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kubernetes import client
from tests.support.resumingwatch import ResumingWatch


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


class DeploymentWatch(ResumingWatch):
    """`states`: the Deployment as read when entered, then every version the watch saw."""

    def __init__(self, api: client.ApiClient, namespace: str, name: str) -> None:
        super().__init__(name)
        self.apps = client.AppsV1Api(api)
        self.namespace = namespace
        self.name = name
        self.states: list[State] = []

    def _list(self) -> str:
        first = State.of(self.apps.read_namespaced_deployment(self.name, self.namespace))
        self.states.append(first)
        return first.resource_version

    def _watched(self) -> tuple[Callable[..., Any], tuple[Any, ...], dict[str, Any]]:
        selector = {"field_selector": f"metadata.name={self.name}"}
        return self.apps.list_namespaced_deployment, (self.namespace,), selector

    def _record(self, kind: str, obj: Any) -> str:
        if kind in ("ADDED", "MODIFIED"):
            self.states.append(State.of(obj))
        return str(obj.metadata.resource_version)
