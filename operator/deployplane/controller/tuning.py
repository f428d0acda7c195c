"""How the operator's process is tuned, and why (docs/architecture.md, "Kopf settings"):
Kopf's settings (`tune_kopf`, applied by the start-up handler) and Python's garbage
collector once start-up is done (`tune_gc`).

Kopf's settings:
- posting off: the event recorder posts ours at a bounded rate;
- no diff-base: Kopf deep-copies every event's essence to detect changes for
  on.create/update handlers, and there are none;
- watch renewed every 5 minutes by the server (`server_timeout`), cut by the client
  after 6 without an answer, 10 s to connect, and reopened by Kopf after 70 s without
  any event or bookmark (`inactivity_timeout`): a half-open connection is noticed;
- Retry-After enforced, error backoffs jittered;
- per-object workers idle out after 1 s (Kopf keeps one task per object that has
  had an event, 5 s by default: 1,000 tasks after a burst);
- a sharded instance watches its kinds through its label selector.
"""

from __future__ import annotations

import gc
import random
from collections.abc import Iterator
from typing import Any

import kopf

from deployplane.controller.sharding import Sharding
from deployplane.kinds import KINDS, KindRegistry
from deployplane.kube.paths import GROUP, VERSION

INACTIVITY_TIMEOUT = 70.0
"""A stream that brings nothing, not even a bookmark, for this long is dead: Kopf
reconnects it (the apiserver sends bookmarks every minute and keeps 75 s of events)."""


class NoDiffBase(kopf.DiffBaseStorage):
    """No diff-base: Kopf builds and diffs one for every event to detect changes for
    on.create/update/delete handlers; with event handlers only it is pure cost."""

    def build(self, *, body: Any, extra_fields: Any = None) -> Any:
        return None

    def fetch(self, *, body: Any) -> None:
        return None

    def store(self, *, body: Any, patch: Any, essence: Any) -> None:
        return None


class JitteredBackoffs:
    """Kopf's API error backoffs, each up to 20% longer at random (re-iterable: Kopf
    iterates it afresh for every request)."""

    def __init__(self, delays: tuple[float, ...] = (1, 1, 2, 3, 5, 8, 13, 21)) -> None:
        self.delays = delays

    def __iter__(self) -> Iterator[float]:
        return (d * (1.0 + 0.2 * random.random()) for d in self.delays)

    def __len__(self) -> int:
        return len(self.delays)


def tune_kopf(
    settings: kopf.OperatorSettings, sharding: Sharding | None = None, kinds: KindRegistry = KINDS
) -> None:
    """The Kopf settings of this module's docstring, and the shard's watch selectors:
    every kind but the indexed ones (connections, which every instance reads whole) is
    watched through the shard's label selector (`deployplane.controller.sharding`)."""
    selector = (sharding or Sharding()).label_selector()
    if selector is not None:
        for kind in kinds:
            if not kind.indexed:
                settings.watching.label_selectors[GROUP, VERSION, kind.plural] = selector
    settings.posting.enabled = False
    settings.persistence.diffbase_storage = NoDiffBase()
    settings.watching.server_timeout = 300
    settings.watching.client_timeout = 360
    settings.watching.connect_timeout = 10
    settings.watching.inactivity_timeout = INACTIVITY_TIMEOUT
    settings.networking.request_timeout = 60
    settings.networking.enforce_retry_after = True
    settings.networking.error_backoffs = JitteredBackoffs()
    settings.queueing.idle_timeout = 1.0


GC_THRESHOLDS = (10_000, 20, 20)
"""Python's are (700, 10, 10): with ~150,000 objects from the imports and a few hundred
per resource, a full collection would walk all of them every few seconds of a converge,
each pause holding up every request in flight."""


def tune_gc() -> None:
    """Once start-up is done: the objects of the imports and of start-up leave the
    collected generations for good (`gc.freeze`), and collections come less often."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)
