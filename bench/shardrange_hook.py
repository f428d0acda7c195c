"""For `bench/shards.py --uid-ranges` only: with the operator's handlers in a `kopf run`,
sets Kopf's public `settings.watching.shard_selectors` (Kopf 1.45) to
$BENCH_SHARD_SELECTOR for every kind but the connections (watched whole, as with label
shards), so the apiserver's sharded list and watch (KEP-5866, ShardedListAndWatch)
splits the resources by their uid's hash. Not part of the operator: docs/sharding.md
says why it offers label shards only."""

from __future__ import annotations

import os
from typing import Any

import kopf

from deployplane.kinds import KINDS
from deployplane.kube.paths import GROUP, VERSION


@kopf.on.startup()
def shard_selector(settings: kopf.OperatorSettings, **_: Any) -> None:
    selector = os.environ["BENCH_SHARD_SELECTOR"]
    for kind in KINDS:
        if not kind.indexed:
            settings.watching.shard_selectors[GROUP, VERSION, kind.plural] = selector
