"""`ApiTransport`: how every call of the control-plane clients travels.

Headers (credentials), the connection pool and its in-flight limit, retries, and turning
answers into models or typed errors (`deployplane.api.errors`). The endpoints themselves
are `ControlPlaneClient`'s (`deployplane.api.client`), which builds on this class.

Retry policy, and why it differs by method:
- GET/PUT/PATCH/DELETE are idempotent: retried on connection errors, timeouts, 429, 5xx.
- POST creates: retried only when the request surely was not processed (connect
  errors, 429, 503). A 500/502/504 or a read timeout may hide a created resource, so
  it is raised at once and the caller (the operator) looks the resource up by name
  instead of risking a duplicate.
Delays are full-jitter exponential backoff, except that a `Retry-After` header is
honoured as given. A `Retry-After` longer than `MAX_HONOURED_RETRY_AFTER` is not slept
in-process: the error is raised with `retry_after` set so the caller can reschedule.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Awaitable, Callable, Mapping
from types import TracebackType
from typing import Any, Self, TypeVar
from urllib.parse import quote, urlsplit
from uuid import UUID

import httpx
from pydantic import BaseModel, ValidationError

from deployplane import __version__
from deployplane.api.errors import ControlPlaneError
from deployplane.api.netstream import LeanTransport
from deployplane.api.responses import error_from

__all__ = ["MAX_HONOURED_RETRY_AFTER", "MAX_IN_FLIGHT", "ApiTransport", "Id"]

log = logging.getLogger(__name__)

ModelT = TypeVar("ModelT", bound=BaseModel)
Id = UUID | str
OnResponse = Callable[[str, str, int, float], None]
Sleep = Callable[[float], Awaitable[None]]

MAX_HONOURED_RETRY_AFTER = 60.0
"""Longest `Retry-After` (seconds) the client waits out itself before giving up."""

MAX_IN_FLIGHT = 16
"""Requests in flight per client, and the size of its connection pool. More callers wait
on a semaphore rather than in httpx's pool, which rescans its whole queue of waiting
requests each time a connection frees up: with 1,000 resources reconciling at once that
scan (quadratic in waiters) took nearly all of the operator's CPU (py-spy, bench/).
Kept small because httpcore also checks every pooled connection (a poll() each) twice
per request; one control plane gains nothing from more parallel connections."""

_POST_RETRY_STATUSES = frozenset({429, 503})
# Raised before any byte of the request left: the service surely did not act on it.
_NOT_SENT_ERRORS = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout)
_RETRYABLE_TRANSPORT_ERRORS = (
    httpx.TimeoutException,
    httpx.NetworkError,
    httpx.RemoteProtocolError,
)


class ApiTransport:
    """Sends requests to one control plane with retries; use as `async with`."""

    def __init__(
        self,
        base_url: str,
        *,
        api_key: str | None = None,
        bearer_token: str | None = None,
        tenant_id: str | UUID | None = None,
        timeout: float = 10.0,
        max_retries: int = 4,
        backoff_base: float = 0.25,
        backoff_max: float = 8.0,
        transport: httpx.AsyncBaseTransport | None = None,
        on_response: OnResponse | None = None,
        sleep: Sleep | None = None,
        clock: Callable[[], float] | None = None,
        max_in_flight: int = MAX_IN_FLIGHT,
    ) -> None:
        headers = {"Accept": "application/json", "User-Agent": f"deployplane/{__version__}"}
        if api_key:
            headers["X-Api-Key"] = api_key
        if bearer_token:
            headers["Authorization"] = f"Bearer {bearer_token}"
        if tenant_id:
            headers["X-Tenant-Id"] = str(tenant_id)
        self._secrets = tuple(s for s in (api_key, bearer_token) if s)
        limits = httpx.Limits(
            max_connections=max_in_flight, max_keepalive_connections=max_in_flight
        )
        if transport is None:
            # httpx's default transport, with cheaper idle-connection checks (netstream.py).
            # Every request goes to `base_url` (no redirect is followed): TLS if https.
            transport = LeanTransport(limits, tls=urlsplit(base_url).scheme.lower() != "http")
        self._http = httpx.AsyncClient(
            base_url=base_url,
            headers=headers,
            timeout=timeout,
            transport=transport,
            limits=limits,  # the proxies' transports (HTTPS_PROXY and the like) too
        )
        self._in_flight = asyncio.Semaphore(max_in_flight)
        self.max_retries = max_retries
        self.backoff_base = backoff_base
        self.backoff_max = backoff_max
        self.on_response = on_response
        # Injectable so tests run retries and polling without real waiting.
        self.sleep: Sleep = sleep or asyncio.sleep
        self.clock: Callable[[], float] = clock or time.monotonic

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._http.aclose()

    # --------------------------------------------------------------------- plumbing

    async def _request(
        self,
        method: str,
        template: str,
        path_params: Mapping[str, Id] | None = None,
        *,
        params: Mapping[str, Any] | None = None,
        json: Any = None,
    ) -> httpx.Response:
        """Send with retries; return a 2xx response or raise a `ControlPlaneError`."""
        quoted = {k: quote(str(v), safe="") for k, v in (path_params or {}).items()}
        path = template.format(**quoted)
        attempt = 0
        while True:
            try:
                async with self._in_flight:
                    started = time.perf_counter()
                    response = await self._http.request(method, path, params=params, json=json)
            except httpx.TransportError as exc:
                self._report(method, template, 0, started)
                error = error_from(method, template, exc, secrets=self._secrets)
                if attempt < self.max_retries and self._may_retry_exception(method, exc):
                    await self.sleep(self._backoff(attempt))
                    attempt += 1
                    continue
                raise error from exc
            self._report(method, template, response.status_code, started)
            if response.is_success:
                return response
            error = error_from(method, template, response, secrets=self._secrets)
            if attempt < self.max_retries and self._may_retry_status(method, response):
                if error.retry_after is not None:
                    if error.retry_after > MAX_HONOURED_RETRY_AFTER:
                        raise error
                    delay = error.retry_after
                else:
                    delay = self._backoff(attempt)
                await self.sleep(delay)
                attempt += 1
                continue
            raise error

    async def _call(
        self,
        model: type[ModelT],
        method: str,
        template: str,
        path_params: Mapping[str, Id] | None = None,
        *,
        params: Mapping[str, Any] | None = None,
        json: Any = None,
    ) -> ModelT:
        """`_request`, then the answer read as `model`."""
        response = await self._request(method, template, path_params, params=params, json=json)
        return self._parse(model, response, method, template)

    @staticmethod
    def _may_retry_exception(method: str, exc: httpx.TransportError) -> bool:
        if method == "POST":
            return isinstance(exc, _NOT_SENT_ERRORS)
        return isinstance(exc, _RETRYABLE_TRANSPORT_ERRORS)

    @staticmethod
    def _may_retry_status(method: str, response: httpx.Response) -> bool:
        if method == "POST":
            return response.status_code in _POST_RETRY_STATUSES
        return response.status_code == 429 or response.status_code >= 500

    def _backoff(self, attempt: int) -> float:
        """Full jitter: uniform over [0, min(cap, base * 2^attempt)]."""
        return random.uniform(0, min(self.backoff_max, self.backoff_base * 2**attempt))

    def _report(self, method: str, template: str, status: int, started: float) -> None:
        if self.on_response is None:
            return
        try:
            self.on_response(method, template, status, time.perf_counter() - started)
        except Exception:  # a broken metrics hook must not break API calls
            log.exception("on_response hook failed")

    def _parse(
        self, model: type[ModelT], response: httpx.Response, method: str, template: str
    ) -> ModelT:
        try:
            return model.model_validate_json(response.content)
        except ValidationError as exc:
            raise self._bad_body(method, template, response, exc) from exc

    @staticmethod
    def _bad_body(
        method: str, template: str, response: httpx.Response, exc: Exception
    ) -> ControlPlaneError:
        # Name the failing fields, not their values: a body may carry secrets.
        if isinstance(exc, ValidationError):
            fields = ", ".join(".".join(map(str, e["loc"])) or "<body>" for e in exc.errors())
            reason = f"unexpected response body (fields: {fields})"
        else:
            reason = "response body is not JSON"
        return ControlPlaneError(
            f"{method} {template}: {response.status_code} {reason}",
            method=method,
            path=template,
            status_code=response.status_code,
        )
