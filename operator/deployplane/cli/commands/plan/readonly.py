"""The plan's control-plane client: the operator's own calls, and nothing that writes.

The plan previews what a pass would do by running the pass's reads (observe, find,
resolve), never its writes; its transport makes that a guarantee rather than a
promise: any request but a read is refused before it is sent. The reads are the GETs,
and the log queries the vendor's API makes as POSTs (a failed revision's message ends
with its log's last lines, as the operator's does).
"""

from __future__ import annotations

from typing import Final

import httpx

from deployplane.api import client as api
from deployplane.api.client import ControlPlaneClient
from deployplane.api.connection import ConnectionSettings

__all__ = ["PlanWouldWrite", "ReadOnlyTransport", "read_only_client", "transport_for"]

LOG_QUERIES: Final = tuple(
    {"/" + t.rsplit("/", 1)[1] for t in (api.BUILD_LOGS, api.REVISION_DEPLOY_LOGS, api.DEPLOY_LOGS)}
)
"""How the log queries' paths end: reads, sent as POSTs."""


class PlanWouldWrite(RuntimeError):
    """A request the plan must never send (a bug of ours: the pass's reads write nothing)."""


class ReadOnlyTransport(httpx.AsyncBaseTransport):
    """Sends a request only if it reads: a GET, or a log query."""

    def __init__(self, inner: httpx.AsyncBaseTransport) -> None:
        self.inner = inner

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        method, path = request.method, request.url.path
        if method != "GET" and not (method == "POST" and path.endswith(LOG_QUERIES)):
            raise PlanWouldWrite(f"the plan sends no {method} {path}: it writes nothing")
        return await self.inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self.inner.aclose()


def transport_for(settings: ConnectionSettings) -> httpx.AsyncBaseTransport | None:
    """The HTTP transport of the plan's clients: the client's own (None). Tests replace
    this function to pass an `httpx.MockTransport`."""
    return None


def read_only_client(settings: ConnectionSettings) -> ControlPlaneClient:
    """The client of one connection, for the plan's `Connections`."""
    inner = transport_for(settings) or httpx.AsyncHTTPTransport()
    return settings.client(transport=ReadOnlyTransport(inner))
