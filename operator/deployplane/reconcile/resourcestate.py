"""What this process knows of one resource between passes, and whose write a watched
status is.

The operator knows what it last wrote to a status (`ResourceState.status`). A status
the watch shows is then one of three things:
- the one we last wrote (our own echo, or nothing new): nothing to do;
- one of ours the watch has not caught up past yet (an earlier write of this process,
  or the status a write of ours was computed against, while that write's echo has not
  come): nothing to do either; a pass meanwhile reasons from our last write, for at
  most `ECHO_WAIT_SECONDS`;
- anything else: someone else's write (a status wiped or edited by hand, say). Its
  watch event asks for a pass (`Workers.observe`), which patches the status back
  against what the apiserver now holds.
So the operator's own writes never ask for a pass, and a hand edit is repaired on the
event that carried it, not at the next resync.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from deployplane.reconcile.approval import approved_generation
from deployplane.reconcile.finalizer import has_finalizer
from deployplane.reconcile.marker import CreatePending, read_marker
from deployplane.reconcile.schedule import Fingerprint, PassHistory
from deployplane.reconcile.schedule import annotation_value as resync_annotation

PAUSED_ANNOTATION: Final = "deployplane.io/paused"
ECHO_WAIT_SECONDS: Final = 30.0
"""How long a status write waits to be seen on the watch before the watched status is
believed again (`ResourceState.echo_until`)."""
MAX_ECHOES: Final = 8
"""At most this many statuses of ours are remembered while the watch catches up."""


def is_paused(body: Mapping[str, Any]) -> bool:
    annotations = (body.get("metadata") or {}).get("annotations") or {}
    return str(annotations.get(PAUSED_ANNOTATION, "")).lower() == "true"


def fingerprint(body: Mapping[str, Any]) -> Fingerprint:
    """What, changed by a watch event, wakes a resource at once: its generation, the
    pause annotation, the resync annotation, the approval annotation."""
    generation = int((body.get("metadata") or {}).get("generation") or 0)
    return (generation, is_paused(body), resync_annotation(body), approved_generation(body))


@dataclass
class ResourceState:
    """Per-resource memory, kept by the controller per key (never module globals)."""

    status: dict[str, Any] | None = None
    """What this operator last wrote (or first read): the watch stream may lag behind
    our own writes, and a stale status (say, without the new deployment id) must never
    drive a decision."""
    echo_until: float | None = None
    """Set by a status write: until the watch shows the status written (or this
    monotonic time passes: a status edited meanwhile never shows it), an older status
    of ours on the watch is older than ours. Kubernetes' own controllers wait for their
    writes the same way ("expectations", with a timeout)."""
    echoes: list[dict[str, Any]] = field(default_factory=list)
    """Statuses of ours the watch may still show, oldest first, until it shows
    `status`: the status our first unseen write was computed against, then every write
    since (registered before it is sent: its echo may come before its answer)."""
    history: PassHistory = field(default_factory=PassHistory)
    marker: CreatePending | None = None
    """The create marker on the object (`reconcile.marker`), as last read or written."""
    finalizer: bool = False
    """Whether the object carries our finalizer (read, or written by this process)."""
    outputs_seen: tuple[str, dict[str, str]] | None = None
    """(ConfigMap, data) as this process last saw the outputs' ConfigMap hold them."""
    resync_warned: str | None = None
    """The resync annotation value last warned about (one Warning Event per value)."""

    def seed(self, body: Mapping[str, Any]) -> None:
        """First sight of the object in this process: start from what it stores."""
        if self.status is None:
            self.status = dict(body.get("status") or {})
        self.marker = read_marker(body)

    def begin_pass(self, body: Mapping[str, Any]) -> None:
        """A pass starts over `body`: first sight seeds the state; the pass has seen its
        fingerprint, and our finalizer if the body carries it."""
        if self.status is None:
            self.seed(body)
        self.history.seen = fingerprint(body)
        self.finalizer = self.finalizer or has_finalizer(body)

    def settle_observed(
        self, body: Mapping[str, Any], now: float, has_id: Callable[[Mapping[str, Any]], bool]
    ) -> dict[str, Any]:
        """The status the apiserver holds (`observed`), which the pass patches against;
        it becomes the status the pass reasons from too (a second replica's write, say),
        unless it lost an id this process recorded: a status wiped by hand never makes
        the pass forget an id, and the pass's write restores the rest."""
        assert self.status is not None
        observed = self.observed(body, now)
        if observed is not self.status and (has_id(observed) or not has_id(self.status)):
            self.status = observed
        return observed

    def observed(self, body: Mapping[str, Any], now: float) -> dict[str, Any]:
        """The status the apiserver holds, as far as this process knows: the watched
        body's, unless it is an older status of ours and our last write is at most
        `ECHO_WAIT_SECONDS` old (the watch has not caught up with it yet). Someone
        else's write is the truth at once."""
        assert self.status is not None
        observed = dict(body.get("status") or {})
        if observed == self.status:
            self._caught_up()
        elif self._waiting(now) and observed in self.echoes:
            return self.status
        return observed

    def foreign(self, status: Mapping[str, Any]) -> bool:
        """Whether a watched status is someone else's write: neither what this process
        last wrote nor one of its own the watch has not caught up past. False before the
        first pass (there is nothing of ours to compare with yet)."""
        if self.status is None:
            return False
        if status == self.status:
            self._caught_up()
            return False
        for i, echo in enumerate(self.echoes):
            if echo == status:
                del self.echoes[:i]  # the watch is past the older ones
                return False
        return True

    def expect(self, before: Mapping[str, Any], after: Mapping[str, Any], until: float) -> None:
        """A status write is about to be sent: `before` is what it was computed against,
        `after` what it makes. Both are ours until the watch shows `after`."""
        if not self.echoes:
            self.echoes.append(dict(before))
        self.echoes.append(dict(after))
        del self.echoes[:-MAX_ECHOES]
        self.echo_until = until

    def written(self, after: dict[str, Any]) -> None:
        """The write `expect` announced succeeded: it is what we last wrote."""
        self.status = after

    def not_written(self, after: Mapping[str, Any]) -> None:
        """The write `expect` announced failed: its status is not ours after all."""
        if len(self.echoes) > 1 and self.echoes[-1] == after:
            self.echoes.pop()  # the last one announced: one pass at a time writes
        if len(self.echoes) <= 1:
            self._caught_up()

    def changed(self, body: Mapping[str, Any]) -> bool:
        """Whether a watch event brings a spec, a pause or an approval the last pass has
        not seen (then the resource is looked at now, whatever its delay)."""
        return self.history.changed(fingerprint(body))

    def _waiting(self, now: float) -> bool:
        return self.echo_until is not None and now < self.echo_until

    def _caught_up(self) -> None:
        self.echo_until = None
        self.echoes.clear()
