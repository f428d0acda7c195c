"""Every version of an Argo CD Application, seen by a watch (not by sampling), and the
sync operations they record: what a test asserts on when it must know how an operation
went while Argo CD may already have started the next one.

How Argo CD v3.5.3 writes an operation (controller/appcontroller.go:
`processRequestedAppOperation`, `setOperationState`, `autoSync`; controller/sync.go:
`SyncAppState`):
- it starts when `operation` is written on the Application (by the controller's
  automated sync or self-heal, or by hand); the controller then writes a new
  `status.operationState`: phase Running, a new `startedAt`, no `syncResult` yet;
- each step of the sync rewrites it (the revision it resolved, the result so far);
- an attempt that fails while retries are left is written as phase Running with
  `finishedAt`, the attempt's `syncResult` and `retryCount` one higher; once the backoff
  has passed the retry starts by writing it again without `finishedAt` and `syncResult`
  (with `retry.refresh`, without the revision too: it syncs the branch's newest commit),
  keeping `startedAt` and `retryCount`;
- it ends with one patch that writes its final phase (Succeeded, Failed, Error) and
  clears `operation`. The next operation replaces the whole state.

So a read of `status.operationState` may find a retry in flight (no `syncResult`) or a
later operation: right after a sync whose last wave created or changed a resource, the
comparison Argo CD makes at once can still find the old object in its cache of the
cluster, call it OutOfSync and start a self-heal of it (the first self-heal waits for no
backoff). The watch sees each version as it was written.

It starts from the resourceVersion of a list made when the context is entered (the
Application need not exist yet), so nothing written after that is missed, until the
context exits (`tests/support/resumingwatch.py`).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kubernetes import client
from tests.support.resumingwatch import ResumingWatch

# How long `through` waits for the watch to reach a version the test read: only a bound
# on a hang (the watch gets every version within moments).
CATCH_UP_SECONDS = 60
ARGO = ("argoproj.io", "v1alpha1", "applications")


@dataclass(frozen=True)
class OperationState:
    """One written version of `status.operationState`."""

    started_at: str
    phase: str
    finished_at: str | None
    retry_count: int
    revision: str | None  # syncResult.revision; None while an attempt has no result
    message: str
    raw: dict[str, Any]

    @classmethod
    def of(cls, state: dict[str, Any]) -> OperationState:
        result = state.get("syncResult")
        return cls(
            started_at=str(state.get("startedAt", "")),
            phase=str(state.get("phase", "")),
            finished_at=state.get("finishedAt"),
            retry_count=int(state.get("retryCount") or 0),
            revision=None if result is None else str(result.get("revision", "")),
            message=str(state.get("message", "")),
            raw=state,
        )

    @property
    def failed_awaiting_retry(self) -> bool:
        """An attempt that failed, its retry not started yet."""
        return (
            self.phase == "Running" and self.finished_at is not None and self.revision is not None
        )

    def resource_result(self, kind: str, name: str) -> dict[str, Any]:
        """The attempt's result for one resource (status, message), or {}."""
        for res in (self.raw.get("syncResult") or {}).get("resources") or []:
            if res.get("kind") == kind and res.get("name") == name:
                return dict(res)
        return {}


@dataclass
class Operation:
    """One operation: what was asked (the Application's `operation`: who, the sync's
    revision and resources) and every state written from its start to its end (`done`)."""

    request: dict[str, Any]
    states: list[OperationState] = field(default_factory=list)
    done: bool = False

    @property
    def started_at(self) -> str:
        return self.states[0].started_at if self.states else ""

    @property
    def automated(self) -> bool:
        return bool((self.request.get("initiatedBy") or {}).get("automated"))

    @property
    def resources(self) -> set[tuple[str, str]]:
        """(kind, name) of each resource a partial sync names; empty for a whole sync."""
        named = (self.request.get("sync") or {}).get("resources") or []
        return {(r["kind"], r["name"]) for r in named}

    @property
    def final(self) -> OperationState | None:
        """The state it ended with, or None while it runs."""
        return self.states[-1] if self.done and self.states else None


class ApplicationWatch(ResumingWatch):
    """`seen()`: every version of Application `name` written after entering, in order;
    `through(app)`: those up to a version the test read; `operations()`: the operations
    they record."""

    bookmarks = True  # an Application can stay idle for longer than a version is kept

    def __init__(self, api: client.ApiClient, namespace: str, name: str) -> None:
        super().__init__(name)
        self.custom = client.CustomObjectsApi(api)
        self.namespace = namespace
        self.name = name
        self._versions: list[dict[str, Any]] = []
        self._lock = threading.Lock()

    def _list(self) -> str:
        call, args, kwargs = self._watched()
        return str(call(*args, **kwargs)["metadata"]["resourceVersion"])

    def _watched(self) -> tuple[Callable[..., Any], tuple[Any, ...], dict[str, Any]]:
        group, version, plural = ARGO
        selector = {"field_selector": f"metadata.name={self.name}"}
        args = (group, version, self.namespace, plural)
        return self.custom.list_namespaced_custom_object, args, selector

    def _record(self, kind: str, obj: Any) -> str:
        if kind in ("ADDED", "MODIFIED", "DELETED"):
            with self._lock:
                self._versions.append(obj)
        return str(obj["metadata"]["resourceVersion"])

    def seen(self) -> list[dict[str, Any]]:
        """The versions seen so far, in order (a copy: the watch goes on)."""
        assert not self.errors, self.errors
        with self._lock:
            return list(self._versions)

    def through(self, app: dict[str, Any] | None) -> list[dict[str, Any]]:
        """The versions up to `app` (the Application as the test read it), once the watch
        has seen that one: everything Argo CD had written by then."""
        assert app is not None, f"no Application {self.name}"
        wanted = app["metadata"]["resourceVersion"]
        deadline = time.monotonic() + CATCH_UP_SECONDS
        while time.monotonic() < deadline:
            versions = self.seen()
            for index, obj in enumerate(versions):
                if obj["metadata"]["resourceVersion"] == wanted:
                    return versions[: index + 1]
            time.sleep(0.1)
        raise AssertionError(f"the watch never saw resourceVersion {wanted} of {self.name}")

    def operations(self, versions: list[dict[str, Any]] | None = None) -> list[Operation]:
        """The operations `versions` (by default every version seen so far) record, in
        order; the last may still run."""
        return operations_of(self.seen() if versions is None else versions)


def operations_of(versions: list[dict[str, Any]]) -> list[Operation]:
    """The operations a run of versions of one Application records, in order: one
    starts where `operation` appears, takes each `status.operationState` written until
    `operation` is cleared, and is then done (so is one whose state was written before
    the first version, once a version has no `operation`)."""
    found: list[Operation] = []
    last: dict[str, Any] | None = None
    running = False
    for obj in versions:
        request = obj.get("operation")
        requested = request is not None
        if request is not None and not running:
            found.append(Operation(dict(request)))
        state = (obj.get("status") or {}).get("operationState")
        # A version that changed something else repeats the state; so do those between
        # a new `operation` and the controller's first write of its state.
        if state and state != last:
            last = state
            if not found:  # written before the watch began
                found.append(Operation(dict(state.get("operation") or {})))
            found[-1].states.append(OperationState.of(state))
        if found and not requested:
            found[-1].done = True
        running = requested
    return found
