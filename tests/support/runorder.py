"""Where a test must run in a tier that shares one cluster, whatever the shuffled order.

The real-node tier has one real node per machine, and the GitOps tier one cluster: a
module that starts a real node of its own (`RUN_FIRST = True`) runs before the tier's
node starts, and the tests that stop the tier's cluster (a module's `RUN_LAST`, in the
order it lists them) after every other test. tests/e2e/conftest.py sorts by `place`
after pytest-random-order has shuffled (the sort is stable: the rest keeps its order).
"""

from __future__ import annotations

import pytest

__all__ = ["place"]


def place(item: pytest.Item) -> tuple[int, int]:
    """A sort key: (-1, 0) first, (1, i) last in RUN_LAST's order, (0, 0) anywhere."""
    module = getattr(item, "module", None)
    if getattr(module, "RUN_FIRST", False):
        return (-1, 0)
    last: tuple[str, ...] = getattr(module, "RUN_LAST", ())
    return (1, last.index(item.name)) if item.name in last else (0, 0)
