"""Plain ASGI middleware: request statistics, fault injection and the body size limit.

Plain ASGI rather than Starlette's BaseHTTPMiddleware, which costs a task and a
memory stream per request; these run on every request of the benchmark.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from starlette.exceptions import HTTPException
from starlette.routing import Match
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from deployplane.emulator.web.jsonguard import body_errors

__all__ = [
    "BodyLimitMiddleware",
    "FaultMiddleware",
    "FaultState",
    "JsonGuardMiddleware",
    "RequestStats",
    "StatsMiddleware",
]

# Faults and statistics concern the API itself, not the emulator's own endpoints (nor
# its upload storage, which stands for the service's object store).
_UPLOADS = "/_uploads/"
_EXEMPT_PREFIXES = (
    "/healthz",
    "/readyz",
    "/_emulator",
    "/openapi.json",
    "/docs",
    "/redoc",
    _UPLOADS,
)

_FAULT_STATUSES = (500, 502, 503, 429)


@dataclass
class FaultState:
    """Mutable at runtime through PUT /_emulator/faults."""

    error_rate: float = 0.0
    latency_ms: float = 0.0
    rng: random.Random = field(default_factory=random.Random)
    # Set when the server is stopping: injected delays end at once, so a shutdown
    # (which waits for requests in flight) never waits on them.
    stopping: asyncio.Event = field(default_factory=asyncio.Event)
    waiting: int = 0  # requests in their delay now

    def stop(self) -> None:
        self.stopping.set()

    async def delay(self) -> None:
        """Sleeps `latency_ms`, or less if the server stops meanwhile."""
        if self.latency_ms > 0 and not self.stopping.is_set():
            self.waiting += 1
            try:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self.stopping.wait(), self.latency_ms / 1000)
            finally:
                self.waiting -= 1


@dataclass
class RequestStats:
    """Counts of answered requests by "METHOD /route/template" and status."""

    counts: Counter[tuple[str, int]] = field(default_factory=Counter)

    def as_json(self) -> dict[str, Any]:
        by_route: dict[str, dict[str, int]] = {}
        for (route, code), count in sorted(self.counts.items()):
            by_route.setdefault(route, {})[str(code)] = count
        return {"total": sum(self.counts.values()), "requests": by_route}


def _json_response(status: int, body: dict[str, Any], headers: list[tuple[bytes, bytes]]) -> Any:
    payload = json.dumps(body).encode()
    start: Message = {
        "type": "http.response.start",
        "status": status,
        "headers": [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(payload)).encode()),
            *headers,
        ],
    }
    return start, {"type": "http.response.body", "body": payload}


def _exempt(scope: Scope) -> bool:
    path: str = scope["path"]
    return path.startswith(_EXEMPT_PREFIXES)


class StatsMiddleware:
    """Counts every API request by route template (not raw path: ids would explode it)."""

    def __init__(self, app: ASGIApp, *, stats: RequestStats, routes: Any) -> None:
        self.app = app
        self.stats = stats
        self.routes = routes

    def _template(self, scope: Scope) -> str:
        route = scope.get("route")
        if route is None:  # answered before routing (fault, 413): match it ourselves
            for candidate in self.routes:
                match, _ = candidate.matches(scope)
                if match is Match.FULL:
                    route = candidate
                    break
        return getattr(route, "path", "<unmatched>")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or _exempt(scope):
            await self.app(scope, receive, send)
            return
        status = 500

        async def recording_send(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, recording_send)
        finally:
            self.stats.counts[(f"{scope['method']} {self._template(scope)}", status)] += 1


class FaultMiddleware:
    """Answers a fraction of API requests with an error without performing them,
    and delays API requests, as configured (and changeable at runtime)."""

    def __init__(self, app: ASGIApp, *, faults: FaultState) -> None:
        self.app = app
        self.faults = faults

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        faults = self.faults
        if scope["type"] != "http" or _exempt(scope):
            await self.app(scope, receive, send)
            return
        if faults.latency_ms > 0:
            await faults.delay()
        if faults.error_rate > 0 and faults.rng.random() < faults.error_rate:
            status = faults.rng.choice(_FAULT_STATUSES)
            headers = [(b"retry-after", b"1")] if status == 429 else []
            detail = "Too many requests." if status == 429 else "Injected fault."
            start, body = _json_response(status, {"detail": detail}, headers)
            await send(start)
            await send(body)
            return
        await self.app(scope, receive, send)


class _BodyTooLarge(HTTPException):
    """An HTTPException so that the framework, which turns other errors raised while
    reading a body into 400, answers it as the 413 it is."""

    def __init__(self) -> None:
        super().__init__(status_code=413, detail="Request body too large.")


class BodyLimitMiddleware:
    """413 for request bodies over the limit, by Content-Length or as they stream in."""

    def __init__(self, app: ASGIApp, *, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def _too_large(self, send: Send) -> None:
        start, body = _json_response(413, {"detail": "Request body too large."}, [])
        await send(start)
        await send(body)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        # An upload (routes/uploads.py) has a limit of its own, checked as it streams.
        if scope["type"] != "http" or scope["path"].startswith(_UPLOADS):
            await self.app(scope, receive, send)
            return
        for name, value in scope["headers"]:
            if name == b"content-length":
                try:
                    declared = int(value)
                except ValueError:
                    declared = 0
                if declared > self.max_bytes:
                    await self._too_large(send)
                    return
                break
        received = 0
        started = False

        async def limited_receive() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_bytes:
                    raise _BodyTooLarge()
            return message

        async def tracking_send(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, limited_receive, tracking_send)
        except _BodyTooLarge:
            if not started:
                await self._too_large(send)


_BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})


def _json_content(scope: Scope) -> bool:
    """Whether the framework may parse this request's body as JSON: for application/json
    and application/*+json, and (when its strict content type is off) for a body
    without a content type."""
    for name, value in scope["headers"]:
        if name == b"content-type":
            kind: bytes = value.split(b";", 1)[0].strip().lower()
            return kind == b"application/json" or (
                kind.startswith(b"application/") and kind.endswith(b"+json")
            )
    return True


class JsonGuardMiddleware:
    """422 for a JSON body that `jsonguard.body_errors` refuses, before the request is
    routed, validated or performed; other bodies are passed on as they came.

    Inside BodyLimitMiddleware: the body read here is at most the limit."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] not in _BODY_METHODS:
            await self.app(scope, receive, send)
            return
        if not _json_content(scope) or scope["path"].startswith(_UPLOADS):
            await self.app(scope, receive, send)
            return
        chunks: list[bytes] = []
        while True:
            message = await receive()
            if message["type"] != "http.request":  # the client went away
                return
            chunks.append(message.get("body", b""))
            if not message.get("more_body", False):
                break
        raw = b"".join(chunks)
        errors = body_errors(raw) if raw else None
        if errors:
            start, body = _json_response(422, {"detail": errors}, [])
            await send(start)
            await send(body)
            return
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if replayed:
                return await receive()
            replayed = True
            return {"type": "http.request", "body": raw, "more_body": False}

        await self.app(scope, replay, send)
