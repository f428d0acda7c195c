"""List, then watch, one kind in one namespace (or all): client-go's reflector shape. No
Kopf, no HTTP: the `WatchSource` that lists and streams is handed in
(`deployplane.controller.kubeapi.KubernetesApi`), so every rule below is unit-tested
without a cluster.

Why not Kopf's watch: Kopf turned every watch event into a processing cycle of its own
(a worker task per object, cause detection, handler invocation) before our handler put
a key on the work queue; with 1,000 new resources that was ~12% of the operator's CPU
in the converge (docs/benchmarks.md). Here a watch event is decoded and handed to
`observe` (`Workers.observe`), nothing else.

The rules:
- list in pages, hand every object over (event type None, as Kopf's initial listing),
  then watch from the list's resourceVersion, with bookmarks, so a reconnect resumes
  where the last event (or bookmark) left off and misses nothing;
- a watch ending (the server's timeout) is resumed from the last resourceVersion at
  once, a broken one (a dropped connection) after a backoff; "410 Gone" (that version
  is compacted away) lists again at once, any other error event after a backoff;
- a new listing reports what vanished since the last one as DELETED (a delete missed
  while the watch was down), so nothing is held for an object that is gone;
- a failure (the CRD not installed yet, RBAC, the apiserver down) is logged and tried
  again after a backoff that doubles up to `backoff_max`; nothing ends the loop but
  cancelling it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

log = logging.getLogger("deployplane.informer")

Observe = Callable[[str | None, Mapping[str, Any]], None]
"""(event type: None for a listed object, else ADDED/MODIFIED/DELETED; the object)."""


class WatchExpired(Exception):
    """The resourceVersion to resume from is too old (410 Gone): list again."""


class WatchError(Exception):
    """The stream carried an error event other than 410: list again, after a backoff."""


@dataclass(frozen=True)
class Page:
    items: list[dict[str, Any]]
    resource_version: str
    continue_token: str | None


class WatchSource(Protocol):
    async def list_page(
        self, plural: str, namespace: str | None, *, limit: int, continue_token: str | None
    ) -> Page: ...

    def watch_events(
        self, plural: str, namespace: str | None, *, resource_version: str, timeout_seconds: int
    ) -> AsyncIterator[dict[str, Any]]: ...


Key = tuple[str, str]
"""(namespace, name)."""


def _key(obj: Mapping[str, Any]) -> Key:
    meta = obj.get("metadata") or {}
    return (meta.get("namespace") or "", meta.get("name") or "")


class Informer:
    def __init__(
        self,
        source: WatchSource,
        plural: str,
        namespace: str | None,
        observe: Observe,
        *,
        page_size: int = 500,
        timeout_seconds: int = 300,
        backoff_initial: float = 1.0,
        backoff_max: float = 30.0,
        sleep: Callable[[float], Any] = asyncio.sleep,
    ) -> None:
        self.source, self.plural, self.namespace = source, plural, namespace
        self.observe = observe
        self.page_size, self.timeout_seconds = page_size, timeout_seconds
        self.backoff_initial, self.backoff_max = backoff_initial, backoff_max
        self._sleep = sleep
        self.known: set[Key] = set()
        """Every object seen alive."""
        self.listed = asyncio.Event()
        """Set once the first listing has been handed over."""
        self.version: str | None = None
        """Where the watch resumes; None: list (again) first."""

    @property
    def where(self) -> str:
        return f"in {self.namespace}" if self.namespace else "cluster-wide"

    async def run(self) -> None:
        """List and watch until cancelled."""
        failures = 0
        while True:
            doing = "list"
            try:
                if self.version is None:
                    self.version = await self.list()
                doing = "watch"
                await self.watch(self.version)
                failures = 0
            except asyncio.CancelledError:
                raise
            except WatchExpired:
                self.version = None
            except Exception as exc:
                # A list that failed lists again; a stream that broke resumes from the
                # last version it delivered.
                delay = min(self.backoff_max, self.backoff_initial * 2**failures)
                failures += 1
                log.warning(
                    "%s %s: %s failed (%s); again in %.0fs",
                    self.plural,
                    self.where,
                    doing,
                    exc,
                    delay,
                )
                await self._sleep(delay)

    async def list(self) -> str:
        """Hand over every object; report those gone since the last listing as DELETED.
        Returns the resourceVersion to watch from."""
        seen: set[Key] = set()
        token: str | None = None
        while True:
            page = await self.source.list_page(
                self.plural, self.namespace, limit=self.page_size, continue_token=token
            )
            for obj in page.items:
                seen.add(_key(obj))
                self._see(None, obj)
            token = page.continue_token
            if not token:
                break
        for namespace, name in self.known - seen:
            self._see("DELETED", {"metadata": {"namespace": namespace, "name": name}})
        self.listed.set()
        return page.resource_version

    async def watch(self, version: str) -> None:
        """Stream from `version`, keeping `self.version` at the last one delivered (None
        when the stream says to list again)."""
        async for event in self.source.watch_events(
            self.plural,
            self.namespace,
            resource_version=version,
            timeout_seconds=self.timeout_seconds,
        ):
            kind, obj = event.get("type"), event.get("object") or {}
            if kind == "ERROR":
                self.version = None  # list again
                if obj.get("code") == 410:
                    return  # routine: the version was compacted away
                # Anything else lists again after the backoff, never in a tight loop.
                raise WatchError(f"watch error {obj.get('code')}: {obj.get('message')}")
            self.version = (obj.get("metadata") or {}).get("resourceVersion") or self.version
            if kind in ("ADDED", "MODIFIED", "DELETED"):
                self._see(kind, obj)

    def _see(self, kind: str | None, obj: Mapping[str, Any]) -> None:
        key = _key(obj)
        if kind == "DELETED":
            self.known.discard(key)
        else:
            self.known.add(key)
        try:
            self.observe(kind, obj)
        except Exception:  # one object the consumer cannot take must not stop the stream
            log.exception("%s %s: %s/%s not handled", self.plural, self.where, *key)
