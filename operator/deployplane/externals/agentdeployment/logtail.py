"""Why a revision failed, in its own words: the last lines of its build log (a
BUILD_FAILED revision) or deploy log (DEPLOY_FAILED), appended to the Stalled
condition's message, so that `kubectl describe` says why without another tool. The
Stalled transition's Warning Event carries the same message (reconcile/outcome.py).

Bounded (TAIL_LINES lines of at most LINE_CHARS characters) and redacted: a value
after a secret's name or after a word such as `token` or `password` is replaced by
`***`, so a build tool that printed one leaks nothing into the resource.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from deployplane.api import errors
from deployplane.api.client import ControlPlaneClient
from deployplane.api.models import Deployment, LogOrder, LogsQuery, RevisionStatus
from deployplane.reconcile.conditions import Condition, ConditionType

__all__ = ["LINE_CHARS", "TAIL_LINES", "fetch_tail", "kept_message", "redact", "with_tail"]

TAIL_LINES = 5
# So that the whole message (about 110 characters before the tail) fits an Event's
# 1,024 characters, which the operator's Event poster would otherwise cut in the middle.
LINE_CHARS = 160
_HEADER = "Last log lines:"
_SECRET_WORDS = r"[A-Za-z0-9_.-]*(?:key|token|secret|password|passwd|pwd|credential)[A-Za-z0-9_.-]*"


def redact(line: str, secret_names: Iterable[str]) -> str:
    """`line` with the value after any secret name (or secret-like word) masked."""
    names = [re.escape(name) for name in secret_names if name]
    words = "|".join([*names, _SECRET_WORDS])
    pattern = re.compile(rf"(?i)\b({words})(\s*[=:]\s*|\s+)(\"[^\"]*\"|'[^']*'|\S+)")
    return pattern.sub(lambda m: f"{m.group(1)}{m.group(2)}***", line)


def with_tail(message: str, lines: Sequence[str], secret_names: Iterable[str]) -> str:
    """The condition message with the log tail (oldest first) on lines of its own."""
    if not lines:
        return message
    names = list(secret_names)
    shown = [_clip(redact(line, names)) for line in lines[-TAIL_LINES:]]
    return "\n".join([f"{message}. {_HEADER}", *(f"  {line}" for line in shown)])


def _clip(line: str) -> str:
    line = " ".join(line.split())  # one line each, whatever the tool printed
    return line if len(line) <= LINE_CHARS else line[: LINE_CHARS - 3] + "..."


def kept_message(conditions: Sequence[Condition], message: str) -> str | None:
    """The Stalled message a pass wrote for this same failure, tail included: kept by
    later passes, which do not read the log again."""
    for condition in conditions:
        if condition.type == ConditionType.STALLED and condition.message.startswith(
            f"{message}. {_HEADER}"
        ):
            return condition.message
    return None


async def fetch_tail(
    client: ControlPlaneClient, dep: Deployment, revision_id: str, status: RevisionStatus
) -> list[str]:
    """The last lines of the log that says why the revision ended `status`, oldest
    first; [] when that log cannot be read (a service without it: the plain message)."""
    query = LogsQuery(order=LogOrder.DESC, limit=TAIL_LINES)
    try:
        if status is RevisionStatus.BUILD_FAILED:
            page = await client.get_build_logs(dep.id, revision_id, query)
        else:
            page = await client.get_deploy_logs(dep.id, query, revision_id)
    except errors.ControlPlaneError:
        return []
    return [entry.message for entry in reversed(page.logs)]
