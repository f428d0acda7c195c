"""Kopf's diff-base storage, switched off: this operator never diffs old against new.

Kopf stores each object's last handled spec (an annotation) so that `on.update` and
field handlers can be given a diff. deployplane has none of those (a daemon reconciles
the whole spec; the only changing handler is `on.delete`, which needs no diff), yet the
annotation would cost one extra PATCH of every new object, and that PATCH one more
watch event for every handler to process. Measured with 1,000 new AgentDeployments
(`bench/operator.py`), see the commit that introduced this module.
"""

from __future__ import annotations

from typing import Any

import kopf


class NoDiffBaseStorage(kopf.DiffBaseStorage):
    """Remembers nothing, writes nothing: every event looks like a creation to Kopf,
    which only matters to creation/update handlers, and there are none."""

    def fetch(self, *, body: Any) -> None:
        return None

    def store(self, *, body: Any, patch: Any, essence: Any) -> None:
        return None
