"""Kopf's diff-base storage, switched off: this operator never diffs old against new.

Kopf stores each object's last handled spec (an annotation) so that `on.update` and
field handlers can be given a diff. deployplane has none of those (Kopf only feeds the
workers watch events), yet the annotation would cost one extra PATCH of every new
object, and that PATCH one more watch event to process. Measured with 1,000 new
AgentDeployments (`bench/operator.py`), see the commit that introduced this module.
Kopf still builds each event's "essence" (a deep copy of the body) for that diff: 3% of
the operator's CPU in a converge (issue 18's profile), for nothing here.
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

    def build(self, *, body: Any, extra_fields: Any = None) -> Any:
        return kopf.BodyEssence()
