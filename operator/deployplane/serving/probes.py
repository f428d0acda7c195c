"""Readiness and the probe server, shared by the operator and the listener agent: each
asks the same two questions of what it depends on (the apiserver, its control plane)
and serves the answers over HTTP (`ProbeServer`). What makes each program stuck
(liveness) is its own (`controller.probes`, `dataplane.probes`).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Final, Protocol

from aiohttp import web
from kubernetes.client.exceptions import ApiException

from deployplane.api.client import ControlPlaneClient
from deployplane.api.connection import ConnectionSettings
from deployplane.api.errors import ControlPlaneError
from deployplane.kube.health import FailureClock
from deployplane.serving.config import Endpoint

__all__ = [
    "ANSWER_TIMEOUT",
    "RECHECK",
    "Close",
    "ProbeServer",
    "Reachability",
    "Readiness",
    "ask_apiserver",
    "ask_control_plane",
    "build_readiness",
]


ANSWER_TIMEOUT: Final = 3.0
"""Seconds readiness waits for the apiserver or the control plane to answer: under the
kubelet's probe timeout (the chart's is 5 s), so a slow answer is an unready pod, not
a probe timeout."""


RECHECK: Final = 5.0
"""Seconds an answer is reused: however often /readyz is asked, the apiserver and the
control plane see at most one request per this many seconds from each replica."""


Ask = Callable[[], Awaitable["str | None"]]
"""Asks something once: None when it answered, else why not."""


class Reachability:
    """Whether something answers now (`ask`), asked at most every `recheck` seconds and
    given `timeout` seconds; the reason when it does not."""

    def __init__(
        self,
        ask: Ask,
        *,
        recheck: float = RECHECK,
        timeout: float = ANSWER_TIMEOUT,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.ask = ask
        self.recheck = recheck
        self.timeout = timeout
        self.clock = clock
        self._last: tuple[float, str | None] | None = None
        self._lock = asyncio.Lock()

    async def unreachable(self) -> str | None:
        async with self._lock:
            if self._last is not None and self.clock() - self._last[0] < self.recheck:
                return self._last[1]
            try:
                why = await asyncio.wait_for(self.ask(), self.timeout)
            except TimeoutError:
                why = f"no answer within {self.timeout:g}s"
            self._last = (self.clock(), why)
            return why


class Getter(Protocol):
    async def get_path(self, path: str) -> tuple[int, bytes]: ...


def ask_apiserver(kube: Getter) -> Ask:
    """The apiserver's own readiness, `GET /readyz` (a 5xx: not ready; any other status
    is an answer: a refused token shows on the watches' failure clock). Ask it of a
    Kubernetes client of its own, without retries (`handlers.configure` does)."""

    async def ask() -> str | None:
        try:
            status, payload = await kube.get_path("/readyz")
        except ApiException as exc:
            return f"GET /readyz: {exc.reason}"
        if status >= 500:
            return f"GET /readyz: {status} {payload.decode(errors='replace')[:200]}"
        return None

    return ask


def ask_control_plane(client: ControlPlaneClient) -> Ask:
    """The operator's own control plane, asked one published read (no answer or a 5xx is
    no answer; any other status is: a refused key shows on the resources)."""

    async def ask() -> str | None:
        try:
            await client.list_listeners(limit=1)
        except ControlPlaneError as exc:
            if exc.status_code is None or exc.status_code >= 500:
                return str(exc)
        return None

    return ask


@dataclass
class Readiness:
    """What readiness looks at: the apiserver (answering now, and no watch or request
    failing for longer than `unhealthy_after`) and the operator's own control plane."""

    health: FailureClock
    kubernetes: Reachability
    control_plane: Reachability | None
    unhealthy_after: float

    async def check(self) -> tuple[bool, dict[str, Any]]:
        """(ready, what was found): the body of /readyz."""
        found: dict[str, Any] = {}
        why = await self.kubernetes.unreachable()
        if why is not None:
            found["kubernetes"] = why
        broken = self.health.unhealthy(self.unhealthy_after)
        for what, error in sorted(broken.items()):
            found[f"kubernetes {what}"] = f"failing for over {self.unhealthy_after:.0f}s: {error}"
        if self.control_plane is not None:
            why = await self.control_plane.unreachable()
            if why is not None:
                found["control plane"] = why
        return not found, found


Close = Callable[[], Awaitable[None]]


def build_readiness(
    health: FailureClock,
    apiserver: Ask,
    control_plane: ConnectionSettings | None,
    unhealthy_after: float,
) -> tuple[Readiness, list[Close]]:
    """Readiness over the apiserver and the operator's own control plane, this one asked
    with a client of its own (one request at a time, no retries); and what to close."""
    if control_plane is None:
        return Readiness(health, Reachability(apiserver), None, unhealthy_after), []
    client = control_plane.client(max_retries=0, max_in_flight=1)
    asked = Reachability(ask_control_plane(client))
    return Readiness(health, Reachability(apiserver), asked, unhealthy_after), [client.aclose]


class ProbeServer:
    """Serves a probe's `check` at `endpoint`: 200 when it passes, 503 when not, each
    with a JSON body saying what was found (the operator's readiness; the listener
    agent's two probes, `deployplane.dataplane.probes`)."""

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
