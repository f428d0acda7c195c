"""The operator's two probes, kept apart because they answer different questions.

- Liveness, "is the process stuck?": Kopf's own endpoint (`--liveness URL`, Kopf's health
  reporter running the `kopf.on.probe` handler `handlers.alive`). It is answered from the
  event loop, so a loop that no longer turns (a frozen process, a blocking call) answers
  nothing and the kubelet restarts the container; it fails outright when a task that moves
  the work has ended (`stalled`): a worker of the pool, the event recorder. Kopf's own
  watch tasks need no check here: one that fails stops the operator (the process exits),
  and one that goes silent is reopened by Kopf (`settings.watching.inactivity_timeout`).
  It never looks at the Kubernetes API or the control plane: a liveness probe that fails
  whenever a dependency does restarts a pod that is only waiting for it, and turns an
  outage into a restart storm.
- Readiness, "can it work now?": `--readiness URL`, served here (`ReadinessServer`) once
  the operator's runtime is built. It fails (503) while the Kubernetes API or a watch has
  been failing for longer than DEPLOYPLANE_UNHEALTHY_AFTER (`FailureClock`), or while the
  control plane of the operator's own connection (DEPLOYPLANE_CONTROL_PLANE_URL) does not
  answer one published read, `GET /v2/listeners?limit=1` (no answer, or a 5xx; any other
  status is an answer: a refused key shows on the resources, not here), the same read
  `deployplane version` makes. An unready operator is not restarted; its pod only leaves
  the Service's endpoints (the chart's metrics Service publishes it anyway).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Final, Protocol

from aiohttp import web

from deployplane.api.client import ControlPlaneClient
from deployplane.api.errors import ControlPlaneError
from deployplane.controller.config import Endpoint
from deployplane.kube.health import FailureClock

__all__ = [
    "CONTROL_PLANE_TIMEOUT",
    "ControlPlaneCheck",
    "Readiness",
    "ReadinessServer",
    "stalled",
]

CONTROL_PLANE_TIMEOUT: Final = 3.0
"""Seconds the readiness read of the control plane may take: under the kubelet's probe
timeout (the chart's is 5 s), so a slow answer is an unready pod, not a probe timeout."""

CONTROL_PLANE_RECHECK: Final = 5.0
"""Seconds an answer of the control plane is reused: however often /readyz is asked, the
control plane sees at most one read per this many seconds from each replica."""


class Pool(Protocol):
    def ended_workers(self) -> int: ...


class Recorder(Protocol):
    def ended(self) -> bool: ...


def stalled(workers: Pool, events: Recorder) -> list[str]:
    """What has stopped moving the work: liveness fails on any of it."""
    found = []
    ended = workers.ended_workers()
    if ended:
        found.append(f"{ended} worker(s) of the pool ended")
    if events.ended():
        found.append("the event recorder ended")
    return found


class ControlPlaneCheck:
    """Whether the operator's own control plane answers; the reason when it does not.

    A client of its own (no retries, a short timeout, one request at a time), so the
    check neither waits behind the passes' requests nor counts their retries."""

    def __init__(
        self,
        client: ControlPlaneClient | None,
        *,
        recheck: float = CONTROL_PLANE_RECHECK,
        timeout: float = CONTROL_PLANE_TIMEOUT,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.client = client
        self.recheck = recheck
        self.timeout = timeout
        self.clock = clock
        self._last: tuple[float, str | None] | None = None
        self._lock = asyncio.Lock()

    async def unreachable(self) -> str | None:
        """None when the control plane answered (or there is no default connection)."""
        if self.client is None:
            return None
        async with self._lock:
            if self._last is not None and self.clock() - self._last[0] < self.recheck:
                return self._last[1]
            why = await self._ask(self.client)
            self._last = (self.clock(), why)
            return why

    async def _ask(self, client: ControlPlaneClient) -> str | None:
        try:
            await asyncio.wait_for(client.list_listeners(limit=1), self.timeout)
        except TimeoutError:
            return f"the control plane did not answer within {self.timeout:g}s"
        except ControlPlaneError as exc:
            if exc.status_code is None or exc.status_code >= 500:
                return f"the control plane did not answer: {exc}"
        return None

    async def aclose(self) -> None:
        if self.client is not None:
            await self.client.aclose()


@dataclass
class Readiness:
    """What readiness looks at: the Kubernetes side's failure clock and the control plane."""

    health: FailureClock
    control_plane: ControlPlaneCheck
    unhealthy_after: float

    async def check(self) -> tuple[bool, dict[str, Any]]:
        """(ready, what was found): the body of /readyz."""
        broken = self.health.unhealthy(self.unhealthy_after)
        found: dict[str, Any] = {
            f"kubernetes {what}": f"failing for over {self.unhealthy_after:.0f}s: {error}"
            for what, error in sorted(broken.items())
        }
        why = await self.control_plane.unreachable()
        if why is not None:
            found["control plane"] = why
        return not found, found


class ReadinessServer:
    """Serves `check` at `endpoint`: 200 when ready, 503 when not, each with a JSON body
    saying what was found."""

    def __init__(
        self, endpoint: Endpoint, check: Callable[[], Awaitable[tuple[bool, dict[str, Any]]]]
    ) -> None:
        self.endpoint = endpoint
        self.check = check
        self._runner: web.AppRunner | None = None

    async def start(self) -> None:
        app = web.Application()
        app.router.add_get(self.endpoint.path, self._answer)
        runner = web.AppRunner(app, handle_signals=False, access_log=None, shutdown_timeout=1.0)
        await runner.setup()
        await web.TCPSite(runner, self.endpoint.host, self.endpoint.port).start()
        self._runner = runner

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def _answer(self, _: web.Request) -> web.Response:
        ready, found = await self.check()
        return web.json_response(found, status=200 if ready else 503)
