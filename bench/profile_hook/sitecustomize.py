"""Loaded by a controller process the benchmark starts under `BENCH_PROFILE=dir`
(this directory is put first on its PYTHONPATH): on SIGUSR1 it writes where the
process's memory is to `$BENCH_PROFILE_MEMORY_OUT`, without any change to the code
being measured.

What it writes: live objects by type (count and shallow bytes, from `gc`), asyncio
tasks by coroutine name (one daemon per resource shows up here), and, only when
`BENCH_TRACEMALLOC=N` (N frames; it slows the process several times over, so never
with a CPU profile), the top allocation sites by line and by file.
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


if _OUT:
    import signal
    import tracemalloc

    _frames = int(os.environ.get("BENCH_TRACEMALLOC") or 0)
    if _frames:
        tracemalloc.start(_frames)
    signal.signal(signal.SIGUSR1, _dump)
