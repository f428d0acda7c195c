"""Loaded by a controller process the benchmark starts under `BENCH_PROFILE=dir`
(this directory is put first on its PYTHONPATH): on SIGUSR1 it writes where the
process's memory is to `$BENCH_PROFILE_MEMORY_OUT`, without any change to the code
being measured.

What it writes: live objects by type (count and shallow bytes, from `gc`), asyncio
tasks by coroutine name (one daemon per resource shows up here), and, only when
`BENCH_TRACEMALLOC=N` (N frames; it slows the process several times over, so never
with a CPU profile), the top allocation sites by line and by file. On SIGUSR2 (the
converge starts) it clears the pause table, and with `BENCH_GC_FREEZE=1` also freezes
the garbage collector's generations.
"""

from __future__ import annotations

import os

_OUT = os.environ.get("BENCH_PROFILE_MEMORY_OUT")


def _dump(signum: int, frame: object) -> None:
    import asyncio
    import collections
    import gc
    import sys
    import tracemalloc

    counts: collections.Counter[str] = collections.Counter()
    sizes: collections.Counter[str] = collections.Counter()
    tasks: collections.Counter[str] = collections.Counter()
    for obj in gc.get_objects():
        kind = type(obj)
        name = f"{kind.__module__}.{kind.__qualname__}"
        counts[name] += 1
        sizes[name] += sys.getsizeof(obj)
        if isinstance(obj, asyncio.Task):
            coro = obj.get_coro()
            tasks[getattr(coro, "__qualname__", repr(coro))] += 1
    lines = [f"gc objects: {sum(counts.values())}, shallow bytes {sum(sizes.values())}"]
    lines += ["", "## live objects by type (top 40 by shallow bytes): count, bytes"]
    lines += [f"{sizes[n]:>12} {counts[n]:>9} {n}" for n, _ in sizes.most_common(40)]
    lines += ["", "## garbage collections since the converge began"]
    lines += ["generation, count, total ms, longest ms"]
    lines += [
        f"gen{gen} {len(ms):>6} {sum(ms):>9.1f} {max(ms, default=0):>7.1f}"
        for gen, ms in sorted(_PAUSES.items())
    ]
    lines += ["", "## asyncio tasks by coroutine"]
    lines += [f"{c:>9} {n}" for n, c in tasks.most_common(20)]
    if tracemalloc.is_tracing():
        snapshot = tracemalloc.take_snapshot()
        total = sum(s.size for s in snapshot.statistics("filename"))
        lines += ["", f"## tracemalloc: {total} bytes traced; top 40 lines"]
        lines += [str(s) for s in snapshot.statistics("lineno")[:40]]
        lines += ["", "## tracemalloc: top 30 files"]
        lines += [str(s) for s in snapshot.statistics("filename")[:30]]
    assert _OUT is not None
    tmp = f"{_OUT}.tmp"
    with open(tmp, "w") as out:
        out.write("\n".join(lines) + "\n")
    os.replace(tmp, _OUT)  # the bench waits for the file: never see half of it


# Pause of each garbage collection by generation, in ms: a full collection walks every
# live container object, and with one daemon per resource that is a pause of the event
# loop that every request in flight waits out (apply-to-POST p99).
_PAUSES: dict[int, list[float]] = {}
_STARTED: list[float] = []


def _on_gc(phase: str, info: dict[str, int]) -> None:
    import time

    if phase == "start":
        _STARTED[:] = [time.perf_counter()]
    elif _STARTED:
        _PAUSES.setdefault(info["generation"], []).append(
            (time.perf_counter() - _STARTED[0]) * 1000
        )


if _OUT:
    import gc
    import signal
    import tracemalloc

    gc.callbacks.append(_on_gc)

    def _converge_starts(signum: int, frame: object) -> None:
        """SIGUSR2, sent by the bench right before the apply: the pause table covers the
        converge from here on. With `BENCH_GC_FREEZE=1`, a what-if rather than a figure:
        every object alive now leaves the collected generations, as a `gc.freeze()`
        after start-up in the operator would do."""
        _PAUSES.clear()
        if os.environ.get("BENCH_GC_FREEZE") == "1":
            gc.freeze()

    signal.signal(signal.SIGUSR2, _converge_starts)
    _frames = int(os.environ.get("BENCH_TRACEMALLOC") or 0)
    if _frames:
        tracemalloc.start(_frames)
    signal.signal(signal.SIGUSR1, _dump)
