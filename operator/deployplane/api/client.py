"""`ControlPlaneClient`: the typed async client of the control-plane API.

One method per endpoint, models in and out (`deployplane.api.models`), typed errors out
(`deployplane.api.errors`). The transport is injectable so tests and the emulator's
in-process checks run without sockets (`httpx.MockTransport`, `httpx.ASGITransport`).

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
import inspect
import logging
import random
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from types import TracebackType
from typing import Any, Self, TypeVar
from urllib.parse import quote
from uuid import UUID

import httpx
from pydantic import BaseModel, TypeAdapter, ValidationError

from deployplane import __version__
from deployplane.api.errors import ControlPlaneError
from deployplane.api.models import (
    BulkDeleteResult,
    Deployment,
    DeploymentCreate,
    DeploymentPatch,
    GitRepository,
    Listener,
    ListenerCreate,
    ListenerPatch,
    OAuthProvider,
    Page,
    Revision,
    RevisionStatus,
)
from deployplane.api.responses import error_from

__all__ = ["MAX_BULK_DELETE", "MAX_FIND_PAGES", "MAX_HONOURED_RETRY_AFTER", "ControlPlaneClient"]

log = logging.getLogger(__name__)

ModelT = TypeVar("ModelT", bound=BaseModel)
Id = UUID | str
OnResponse = Callable[[str, str, int, float], None]
Sleep = Callable[[float], Awaitable[None]]

MAX_HONOURED_RETRY_AFTER = 60.0
"""Longest `Retry-After` (seconds) the client waits out itself before giving up."""

# Path templates, exactly as the spec writes them; also the label given to on_response.
DEPLOYMENTS = "/v2/deployments"
DEPLOYMENT = "/v2/deployments/{deployment_id}"
REVISIONS = "/v2/deployments/{deployment_id}/revisions"
REVISION = "/v2/deployments/{deployment_id}/revisions/{revision_id}"
REDEPLOY = "/v2/deployments/{deployment_id}/revisions/{revision_id}/redeploy"
LISTENERS = "/v2/listeners"
LISTENER = "/v2/listeners/{listener_id}"
REPOSITORIES = "/v1/integrations/git_host/{integration_id}/repos"
OAUTH_PROVIDER = "/v2/auth/providers/{provider_id}"

MAX_BULK_DELETE = 100
"""Most ids one bulk DELETE /v2/deployments takes (the published contract)."""

MAX_FIND_PAGES = 50
"""Pages of 100 `find_deployment_by_name` reads at most before it gives up."""

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

_REPOSITORY_LIST = TypeAdapter(list[GitRepository])


def _dump(body: BaseModel) -> dict[str, Any]:
    return body.model_dump(mode="json", exclude_unset=True)


def _query(**params: Any) -> dict[str, Any]:
    return {key: value for key, value in params.items() if value is not None}


def _bool(value: bool | None) -> str | None:
    return None if value is None else str(value).lower()


class ControlPlaneClient:
    """Async client of the control-plane API; use as `async with ControlPlaneClient(...)`."""

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
        self._http = httpx.AsyncClient(
            base_url=base_url,
            headers=headers,
            timeout=timeout,
            transport=transport,
            limits=httpx.Limits(
                max_connections=max_in_flight, max_keepalive_connections=max_in_flight
            ),
        )
        self._in_flight = asyncio.Semaphore(max_in_flight)
        self.max_retries = max_retries
        self.backoff_base = backoff_base
        self.backoff_max = backoff_max
        self.on_response = on_response
        # Injectable so tests run retries and polling without real waiting.
        self.sleep: Sleep = sleep or asyncio.sleep
        self.clock: Callable[[], float] = clock or time.monotonic

    def __repr__(self) -> str:  # never show credentials
        return f"ControlPlaneClient(base_url={str(self._http.base_url)!r})"

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

    # ------------------------------------------------------------------ deployments

    async def create_deployment(self, body: DeploymentCreate) -> Deployment:
        response = await self._request("POST", DEPLOYMENTS, json=_dump(body))
        return self._parse(Deployment, response, "POST", DEPLOYMENTS)

    async def get_deployment(self, deployment_id: Id) -> Deployment:
        response = await self._request("GET", DEPLOYMENT, {"deployment_id": deployment_id})
        return self._parse(Deployment, response, "GET", DEPLOYMENT)

    async def update_deployment(self, deployment_id: Id, body: DeploymentPatch) -> Deployment:
        response = await self._request(
            "PATCH", DEPLOYMENT, {"deployment_id": deployment_id}, json=_dump(body)
        )
        return self._parse(Deployment, response, "PATCH", DEPLOYMENT)

    async def delete_deployment(
        self, deployment_id: Id, *, delete_tracing_project: bool = False
    ) -> None:
        """204; the tracing project made with it stays unless `delete_tracing_project`."""
        params = {"delete_tracing_project": "true"} if delete_tracing_project else None
        await self._request("DELETE", DEPLOYMENT, {"deployment_id": deployment_id}, params=params)

    async def delete_deployments(self, deployment_ids: Sequence[Id]) -> BulkDeleteResult:
        """Bulk delete (at most 100): 200 when all went, 207 with each id's outcome when
        some failed (both returned); a 404 (none known) is raised as `NotFound`."""
        if not 1 <= len(deployment_ids) <= MAX_BULK_DELETE:
            raise ValueError(f"between 1 and {MAX_BULK_DELETE} deployment ids per call")
        params = {"deployment_ids": [str(i) for i in deployment_ids]}
        response = await self._request("DELETE", DEPLOYMENTS, params=params)
        return self._parse(BulkDeleteResult, response, "DELETE", DEPLOYMENTS)

    async def list_deployments(
        self,
        *,
        name_contains: str | None = None,
        status: str | None = None,
        image_version: str | None = None,
        deployment_type: str | None = None,
        deployment_ids: Sequence[Id] | None = None,
        remote_reconciled: bool | None = None,
        limit: int | None = None,
        offset: int | None = None,
    ) -> Page[Deployment]:
        """One page, with the published filters (there is no exact-name filter: see
        `find_deployment_by_name`)."""
        params = _query(
            name_contains=name_contains,
            status=status,
            image_version=image_version,
            deployment_type=deployment_type,
            deployment_ids=",".join(map(str, deployment_ids)) if deployment_ids else None,
            remote_reconciled=_bool(remote_reconciled),
            limit=limit,
            offset=offset,
        )
        response = await self._request("GET", DEPLOYMENTS, params=params)
        return self._parse(Page[Deployment], response, "GET", DEPLOYMENTS)

    async def iter_deployments(
        self, *, name_contains: str | None = None, page_size: int = 100, **filters: Any
    ) -> AsyncIterator[Deployment]:
        async def page(offset: int | None) -> Page[Deployment]:
            return await self.list_deployments(
                name_contains=name_contains, limit=page_size, offset=offset, **filters
            )

        async for item in _paginate(page, page_size):
            yield item

    async def find_deployment_by_name(
        self, name: str, *, max_pages: int = MAX_FIND_PAGES
    ) -> Deployment | None:
        """The deployment named exactly `name`, or None.

        The service has no exact-name filter: `name_contains` narrows the listing and the
        exact match is made here, following `offset` through every page (other names may
        contain this one). Bounded: beyond `max_pages` full pages it raises rather than
        answer "none" from a listing it did not finish.
        """
        pages = 0

        async def page(offset: int | None) -> Page[Deployment]:
            nonlocal pages
            if pages >= max_pages:
                raise ControlPlaneError(
                    f"GET {DEPLOYMENTS}: more than {max_pages * 100} deployments contain "
                    f"the name {name!r}; cannot tell whether it exists"
                )
            pages += 1
            return await self.list_deployments(name_contains=name, limit=100, offset=offset)

        async for deployment in _paginate(page, 100):
            if deployment.name == name:
                return deployment
        return None

    async def redeploy_revision(self, deployment_id: Id, revision_id: Id) -> Deployment:
        """Roll back: a new revision with that revision's source revision config."""
        ids = {"deployment_id": deployment_id, "revision_id": revision_id}
        response = await self._request("POST", REDEPLOY, ids)
        return self._parse(Deployment, response, "POST", REDEPLOY)

    # -------------------------------------------------------------------- revisions

    async def get_revision(self, deployment_id: Id, revision_id: Id) -> Revision:
        ids = {"deployment_id": deployment_id, "revision_id": revision_id}
        response = await self._request("GET", REVISION, ids)
        return self._parse(Revision, response, "GET", REVISION)

    async def list_revisions(
        self,
        deployment_id: Id,
        *,
        status: Sequence[str] | None = None,
        remote_reconciled: bool | None = None,
        limit: int | None = None,
        offset: int | None = None,
    ) -> Page[Revision]:
        """Newest first; `status` filters by any of the given revision statuses."""
        params = _query(
            status=",".join(status) if status else None,
            remote_reconciled=_bool(remote_reconciled),
            limit=limit,
            offset=offset,
        )
        response = await self._request(
            "GET", REVISIONS, {"deployment_id": deployment_id}, params=params
        )
        return self._parse(Page[Revision], response, "GET", REVISIONS)

    async def iter_revisions(
        self, deployment_id: Id, *, page_size: int = 100
    ) -> AsyncIterator[Revision]:
        async def page(offset: int | None) -> Page[Revision]:
            return await self.list_revisions(deployment_id, limit=page_size, offset=offset)

        async for item in _paginate(page, page_size):
            yield item

    async def wait_for_revision(
        self,
        deployment_id: Id,
        revision_id: Id,
        *,
        poll_interval: float = 2.0,
        max_interval: float = 30.0,
        # The agreed surface takes a timeout; it is measured on the injectable clock.
        timeout: float | None = None,  # noqa: ASYNC109
        on_change: Callable[[Revision], Awaitable[None] | None] | None = None,
    ) -> Revision:
        """Poll the revision until its status is terminal and return it.

        The interval doubles from `poll_interval` up to `max_interval` and starts over
        whenever the status changes (a moving revision tends to move again soon).
        `on_change` sees the first status and every change. Raises `TimeoutError` when
        `timeout` seconds pass without a terminal status.
        """
        deadline = None if timeout is None else self.clock() + timeout
        interval = poll_interval
        seen: RevisionStatus | None = None
        while True:
            revision = await self.get_revision(deployment_id, revision_id)
            if revision.status != seen:
                seen = revision.status
                interval = poll_interval
                if on_change is not None:
                    outcome = on_change(revision)
                    if inspect.isawaitable(outcome):
                        await outcome
            if revision.status.is_terminal:
                return revision
            delay = interval
            if deadline is not None:
                remaining = deadline - self.clock()
                if remaining <= 0:
                    raise TimeoutError(
                        f"revision {revision_id} of deployment {deployment_id} still "
                        f"{revision.status.value} after {timeout:g}s"
                    )
                delay = min(delay, remaining)
            await self.sleep(delay)
            interval = min(interval * 2, max_interval)

    # -------------------------------------------------------------------- listeners

    async def create_listener(self, body: ListenerCreate) -> Listener:
        response = await self._request("POST", LISTENERS, json=_dump(body))
        return self._parse(Listener, response, "POST", LISTENERS)

    async def get_listener(self, listener_id: Id) -> Listener:
        response = await self._request("GET", LISTENER, {"listener_id": listener_id})
        return self._parse(Listener, response, "GET", LISTENER)

    async def update_listener(self, listener_id: Id, body: ListenerPatch) -> Listener:
        response = await self._request(
            "PATCH", LISTENER, {"listener_id": listener_id}, json=_dump(body)
        )
        return self._parse(Listener, response, "PATCH", LISTENER)

    async def delete_listener(self, listener_id: Id) -> None:
        await self._request("DELETE", LISTENER, {"listener_id": listener_id})

    async def list_listeners(
        self, *, limit: int | None = None, offset: int | None = None
    ) -> Page[Listener]:
        params = _query(limit=limit, offset=offset)
        response = await self._request("GET", LISTENERS, params=params)
        return self._parse(Page[Listener], response, "GET", LISTENERS)

    async def iter_listeners(self, *, page_size: int = 100) -> AsyncIterator[Listener]:
        async def page(offset: int | None) -> Page[Listener]:
            return await self.list_listeners(limit=page_size, offset=offset)

        async for item in _paginate(page, page_size):
            yield item

    # ------------------------------------------------------------- read-only lookups

    async def list_repositories(self, integration_id: Id) -> list[GitRepository]:
        response = await self._request("GET", REPOSITORIES, {"integration_id": integration_id})
        try:
            return _REPOSITORY_LIST.validate_python(response.json())
        except (ValueError, ValidationError) as exc:
            raise self._bad_body("GET", REPOSITORIES, response, exc) from exc

    async def get_oauth_provider(self, provider_id: str) -> OAuthProvider:
        response = await self._request("GET", OAUTH_PROVIDER, {"provider_id": provider_id})
        return self._parse(OAuthProvider, response, "GET", OAUTH_PROVIDER)

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


async def _paginate(
    fetch: Callable[[int | None], Awaitable[Page[ModelT]]], page_size: int
) -> AsyncIterator[ModelT]:
    """Follow `offset` from page to page until the last one.

    The published body always carries an integer `offset`: where the next page starts.
    A page shorter than `page_size` (or empty) is the last; an offset that does not
    advance past the items seen ends the walk too, so a service that echoes the
    request's offset instead still cannot make this loop forever.
    """
    offset: int | None = None
    while True:
        page = await fetch(offset)
        for item in page.resources:
            yield item
        here = offset or 0
        following = here + len(page.resources) if page.offset is None else page.offset
        if len(page.resources) < page_size or following <= here:
            return
        offset = following
