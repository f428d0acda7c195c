"""A fault-injecting reverse proxy in front of the kube-apiserver, for e2e tests of the
operator's Kubernetes client: plain HTTP on 127.0.0.1, forwarded over TLS to the
apiserver with the client's own `Authorization` header (so tokens, their expiry and
their rotation are the apiserver's to judge), responses streamed (watches work).

Faults, each switched on by the test:
- `throttle(method, path_regex, count, retry_after)`: the next `count` matching
  requests are answered 429 with `Retry-After` instead of being forwarded;
- `close_watches = True`: every watch request is answered 200 with an empty body at
  once (a proxy or apiserver closing the stream immediately);
- `refuse_deployplane = True`: every list and watch of deployplane's kinds is answered
  503 (a watch gap), and `cut_watches()` ends the streams open now;
- `arrivals`: (time, method, path, query, status) of every request, for the assertions.

Runs its own event loop on a thread; `start()` it, read `url`, `stop()` it (the apiserver
is then lost to its clients: connections refused), `start()` it again on the same port.
"""

from __future__ import annotations

import asyncio
import re
import ssl
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import aiohttp
from aiohttp import web

_HOP_BY_HOP = {
    "connection",
    "keep-alive",
    "transfer-encoding",
    "content-length",
    "content-encoding",
    "host",
    "te",
    "trailer",
    "upgrade",
}


@dataclass
class _Throttle:
    method: str
    path: re.Pattern[str]
    count: int
    retry_after: int


@dataclass
class ApiServerProxy:
    upstream: str
    ca_file: str
    close_watches: bool = False
    refuse_deployplane: bool = False
    arrivals: list[tuple[float, str, str, str, int]] = field(default_factory=list)
    _throttles: list[_Throttle] = field(default_factory=list)
    _streams: set[web.StreamResponse] = field(default_factory=set)
    _loop: asyncio.AbstractEventLoop | None = None
    _thread: threading.Thread | None = None
    port: int = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def throttle(self, method: str, path_regex: str, count: int, retry_after: int) -> None:
        self._throttles.append(_Throttle(method, re.compile(path_regex), count, retry_after))

    def matching(self, method: str, path_regex: str) -> list[tuple[float, int]]:
        """(time, status) of the requests that matched, in order."""
        pattern = re.compile(path_regex)
        return [
            (t, s) for t, m, p, _q, s in list(self.arrivals) if m == method and pattern.search(p)
        ]

    def cut_watches(self) -> None:
        loop = self._loop
        assert loop is not None
        for stream in list(self._streams):
            loop.call_soon_threadsafe(_abort, stream)

    def start(self) -> ApiServerProxy:
        ready = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(ready,), daemon=True)
        self._thread.start()
        assert ready.wait(10), "the proxy did not start"
        return self

    def stop(self) -> None:
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
        if self._thread is not None:
            self._thread.join(10)

    def _run(self, ready: threading.Event) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        asyncio.set_event_loop(loop)
        context = ssl.create_default_context(cafile=self.ca_file)
        session: aiohttp.ClientSession | None = None

        async def handle(request: web.Request) -> web.StreamResponse:
            nonlocal session
            if session is None:
                session = aiohttp.ClientSession(
                    connector=aiohttp.TCPConnector(ssl=context, limit=0),
                    timeout=aiohttp.ClientTimeout(total=None, sock_connect=10),
                    auto_decompress=False,
                )
            return await self._forward(request, session)

        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_route("*", "/{tail:.*}", handle)
        # A second's grace at stop(), then what is still forwarded (the watches of an
        # operator already stopped, open until the apiserver ends them) is cancelled:
        # the default (60 s) outlasted stop()'s join, leaving the thread behind.
        runner = web.AppRunner(app, handle_signals=False, access_log=None, shutdown_timeout=1.0)
        loop.run_until_complete(runner.setup())
        # 0 picks a free port; a restart (start() after stop()) takes the same one again,
        # so a kubeconfig naming the proxy reaches it once it is back.
        site = web.TCPSite(runner, "127.0.0.1", self.port)
        loop.run_until_complete(site.start())
        self.port = runner.addresses[0][1]
        ready.set()
        try:
            loop.run_forever()
        finally:
            loop.run_until_complete(runner.cleanup())
            if session is not None:
                loop.run_until_complete(session.close())
            loop.close()

    def _record(self, request: web.Request, status: int) -> None:
        self.arrivals.append(
            (time.monotonic(), request.method, request.path, request.query_string, status)
        )

    async def _forward(
        self, request: web.Request, session: aiohttp.ClientSession
    ) -> web.StreamResponse:
        watch = request.query.get("watch") in ("true", "1")
        ours = "/apis/deployplane.io/" in request.path and request.method == "GET"
        for throttle in self._throttles:
            if (
                throttle.count > 0
                and throttle.method == request.method
                and throttle.path.search(request.path)
            ):
                throttle.count -= 1
                self._record(request, 429)
                return web.json_response(
                    {"kind": "Status", "code": 429, "message": "too many requests"},
                    status=429,
                    headers={"Retry-After": str(throttle.retry_after)},
                )
        if watch and self.close_watches:
            self._record(request, 200)
            return web.Response(status=200, content_type="application/json", body=b"")
        if ours and self.refuse_deployplane:
            self._record(request, 503)
            return web.json_response({"kind": "Status", "code": 503}, status=503)
        headers = {k: v for k, v in request.headers.items() if k.lower() not in _HOP_BY_HOP}
        # The body is passed on as read: ask for it uncompressed. (The apiserver gzips
        # a large answer, such as the CRD list once the Gateway API and KEDA CRDs are
        # installed, and the encoding header is not passed on.)
        headers = {k: v for k, v in headers.items() if k.lower() != "accept-encoding"}
        headers["Accept-Encoding"] = "identity"
        body = await request.read()
        async with session.request(
            request.method,
            self.upstream + request.path_qs,
            headers=headers,
            data=body or None,
        ) as upstream:
            self._record(request, upstream.status)
            out = web.StreamResponse(
                status=upstream.status,
                headers={k: v for k, v in upstream.headers.items() if k.lower() not in _HOP_BY_HOP},
            )
            await out.prepare(request)
            self._streams.add(out)
            try:
                async for chunk in upstream.content.iter_any():
                    await out.write(chunk)
                await out.write_eof()
            except (ConnectionError, aiohttp.ClientError, asyncio.CancelledError):
                pass
            finally:
                self._streams.discard(out)
            return out


def _abort(stream: Any) -> None:
    transport = getattr(stream, "_req", None)
    transport = getattr(transport, "transport", None)
    if transport is not None:
        transport.close()
