"""A fault-injecting HTTP proxy for e2e tests, between the operator and a strict emulator.

The e2e suites run the emulator in strict mode (the published contract only), so they
cannot use its `/_emulator/*` extensions. What they need from those, fault injection
and request counts, happens here instead, outside the service being emulated:

- `error_rate`: that fraction of requests is answered 500/502/503/429 without being
  forwarded (as the emulator's own fault middleware does);
- `latency_ms`: every request is delayed that long before it is forwarded;
- `hold(method, path_regex, seconds)`: matching requests are forwarded and *performed*,
  then their answer is held back: a client killed meanwhile never learns the outcome
  (the "killed between POST and status write" window);
- `stats()`: requests answered, by "METHOD /route/template" and status, as the
  emulator's stats body ({"total": N, "requests": {route: {status: count}}}), plus
  "arrived": {route: count} of every request received, answered or not.

Listens on 127.0.0.1 on a free port; threads, so a held request never blocks others.
"""

from __future__ import annotations

import random
import re
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx

__all__ = ["FaultProxy", "route_template"]

_FAULT_STATUSES = (500, 502, 503, 429)
_HOP_BY_HOP = {
    "connection",
    "keep-alive",
    "transfer-encoding",
    "content-length",
    "host",
    "te",
    "trailer",
    "upgrade",
    "proxy-authorization",
}
_UUID = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")
_ID_NAMES = {
    "deployments": "{deployment_id}",
    "revisions": "{revision_id}",
    "listeners": "{listener_id}",
    "git_host": "{integration_id}",
    "providers": "{provider_id}",
}


def route_template(path: str) -> str:
    """`/v2/deployments/<uuid>` -> `/v2/deployments/{deployment_id}` (ids would make
    every path its own route)."""
    parts = path.split("?", 1)[0].split("/")
    for i in range(1, len(parts)):
        name = _ID_NAMES.get(parts[i - 1])
        if name and (_UUID.match(parts[i]) or parts[i - 1] == "providers"):
            parts[i] = name
    return "/".join(parts)


@dataclass
class _Hold:
    method: str
    path: re.Pattern[str]
    seconds: float


@dataclass
class FaultProxy:
    """Forwards to `upstream` (a base URL); `start()` it, read `url`, `stop()` it."""

    upstream: str
    error_rate: float = 0.0
    latency_ms: float = 0.0
    holds: list[_Hold] = field(default_factory=list)
    counts: Counter[tuple[str, int]] = field(default_factory=Counter)
    arrived: Counter[str] = field(default_factory=Counter)
    url: str = ""
    # 0 picks a free port; a restart (start() again) reuses the one it got.
    port: int = 0
    rng: random.Random = field(default_factory=lambda: random.Random(13))
    _server: ThreadingHTTPServer | None = None
    _client: httpx.Client | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def start(self) -> FaultProxy:
        self._client = httpx.Client(base_url=self.upstream, timeout=60)
        self._server = ThreadingHTTPServer(("127.0.0.1", self.port), _handler_for(self))
        self._server.daemon_threads = True
        self.port = int(self._server.server_address[1])
        self.url = f"http://127.0.0.1:{self.port}"
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._client is not None:
            self._client.close()
            self._client = None

    def set_faults(
        self, *, error_rate: float | None = None, latency_ms: float | None = None
    ) -> None:
        if error_rate is not None:
            self.error_rate = error_rate
        if latency_ms is not None:
            self.latency_ms = latency_ms

    def hold(self, method: str, path_regex: str, seconds: float) -> None:
        """Perform matching requests, then keep their answer back for `seconds`."""
        self.holds.append(_Hold(method, re.compile(path_regex), seconds))

    def clear_holds(self) -> None:
        self.holds.clear()

    def stats(self) -> dict[str, Any]:
        with self._lock:
            items = sorted(self.counts.items())
        by_route: dict[str, dict[str, int]] = {}
        for (route, code), count in items:
            by_route.setdefault(route, {})[str(code)] = count
        with self._lock:
            arrived = dict(self.arrived)
        # "arrived" also counts requests whose answer is still held back or in flight
        total = sum(count for _, count in items)
        return {"total": total, "requests": by_route, "arrived": arrived}

    # ------------------------------------------------------------------ internals

    def _record(self, method: str, path: str, status: int) -> None:
        with self._lock:
            self.counts[(f"{method} {route_template(path)}", status)] += 1

    def _held_for(self, method: str, path: str) -> float:
        return max(
            (h.seconds for h in self.holds if h.method == method and h.path.search(path)),
            default=0.0,
        )

    def answer(
        self, method: str, path: str, headers: dict[str, str], body: bytes
    ) -> httpx.Response:
        with self._lock:
            self.arrived[f"{method} {route_template(path)}"] += 1
        if self.latency_ms:
            time.sleep(self.latency_ms / 1000)
        if self.error_rate and self.rng.random() < self.error_rate:
            status = self.rng.choice(_FAULT_STATUSES)
            extra = {"retry-after": "1"} if status == 429 else {}
            return httpx.Response(status, json={"detail": "injected fault"}, headers=extra)
        assert self._client is not None
        response = self._client.request(method, path, headers=headers, content=body)
        held = self._held_for(method, path)
        if held:
            time.sleep(held)
        return response


def _handler_for(proxy: FaultProxy) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass  # quiet: headers may carry the API key

        def _forward(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            body = self.rfile.read(length) if length else b""
            headers = {k: v for k, v in self.headers.items() if k.lower() not in _HOP_BY_HOP}
            try:
                response = proxy.answer(self.command, self.path, headers, body)
            except httpx.HTTPError:
                response = httpx.Response(502, json={"detail": "upstream unreachable"})
            content = response.content
            proxy._record(self.command, self.path, response.status_code)
            try:
                self.send_response(response.status_code)
                for key, value in response.headers.items():
                    if key.lower() not in _HOP_BY_HOP and key.lower() != "content-encoding":
                        self.send_header(key, value)
                self.send_header("content-length", str(len(content)))
                self.end_headers()
                if content and self.command != "HEAD":
                    self.wfile.write(content)
            except (BrokenPipeError, ConnectionResetError):
                self.close_connection = True  # the client is gone (e.g. killed)

        do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _forward

    return Handler
