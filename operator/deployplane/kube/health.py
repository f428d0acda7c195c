"""How long each way of talking to Kubernetes has been failing: what the readiness probe
tells (`deployplane.controller.probes`; liveness never looks here), the metric
`deployplane_kube_failing_seconds{what}` shows, and one log line announces.

A "what" (say `api`, or `watch agentdeployments`) is failing from its first failure
after a success until its next success; a success clears it at once.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

log = logging.getLogger("deployplane.kube.health")


class FailureClock:
    def __init__(self, *, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._since: dict[str, float] = {}
        self._last_error: dict[str, str] = {}
        self._announced: set[str] = set()

    def failed(self, what: str, error: str) -> None:
        self._since.setdefault(what, self._clock())
        self._last_error[what] = error

    def succeeded(self, what: str) -> None:
        if self._since.pop(what, None) is not None and what in self._announced:
            log.warning("Kubernetes %s works again", what)
        self._announced.discard(what)
        self._last_error.pop(what, None)

    def failing_for(self, what: str) -> float:
        """Seconds `what` has been failing (0.0: it is not)."""
        since = self._since.get(what)
        return 0.0 if since is None else self._clock() - since

    def failing(self) -> dict[str, float]:
        """Every `what` failing now, and for how long."""
        return {what: self.failing_for(what) for what in self._since}

    def unhealthy(self, threshold: float) -> dict[str, str]:
        """What has been failing for longer than `threshold` seconds, with its last
        error; each is logged once (a WARNING line naming it) until it recovers."""
        out = {}
        for what, seconds in self.failing().items():
            if seconds > threshold:
                out[what] = self._last_error.get(what, "")
                if what not in self._announced:
                    self._announced.add(what)
                    log.warning(
                        "Kubernetes %s failing for %.0fs (over %.0fs): %s",
                        what,
                        seconds,
                        threshold,
                        out[what],
                    )
        return out
