"""Kubernetes reads and every write of the operator (status patches, the finalizer and
create marker, the finalizer's removal, Events), over one aiohttp session on
the event loop; the data-plane agent's `ClusterApi` builds on it.

Every request goes through `_send`, which holds the policy (`deployplane.kube.retry`):
a 401 logs in again (`credentials.load_configuration`: the token file, the kubeconfig
and its exec plugin read anew) and sends once more; a 429 or 5xx, or no answer, waits
(Retry-After, else exponential, with jitter) and sends again; `health` records how
long requests have been failing, for the probes.

Why raw aiohttp rather than kubernetes_asyncio or lightkube: measured in
docs/benchmarks.md ("Kubernetes client"): per status patch it costs the operator less
CPU than either, and aiohttp is already here as Kopf's own client. Why not through
Kopf's API: Kopf applies a handler's `patch` only when the handler returns, while the
create marker must be durable *during* a pass, before the create; and the
workers that run the passes are not Kopf handlers.
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
import os
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Container, Mapping
from typing import Any

import aiohttp
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from deployplane.kube.credentials import bearer_token, load_configuration, ssl_context
from deployplane.kube.events import event_body
from deployplane.kube.finalizers import FinalizerRequests
from deployplane.kube.health import FailureClock
from deployplane.kube.paths import collection as _collection
from deployplane.kube.paths import object_path as _path
from deployplane.kube.retry import Backoff, parse_retry_after, retryable

log = logging.getLogger("deployplane.kube")


class ConfigMapRefused(ApiException):  # type: ignore[misc]
    """A ConfigMap request the apiserver refused or did not answer; its message names
    the request and the apiserver's reason (`reconcile.outputs` reports it as
    ConfigMapWriteFailed: kube/ is the floor below reconcile/ and never imports it)."""

    def __init__(self, method: str, path: str, cause: ApiException) -> None:
        super().__init__(status=cause.status, reason=cause.reason)
        self.request = f"{method} {path}"

    def __str__(self) -> str:
        return f"{self.request}: {self.status} {self.reason}"


def instance_name() -> str:
    """The Events' reportingInstance: the pod's name (POD_NAME from the downward API,
    else the hostname, which is the pod's name in a pod)."""
    return os.environ.get("POD_NAME") or os.environ.get("HOSTNAME") or os.uname().nodename


class KubernetesApi(FinalizerRequests):
    """Implements `deployplane.externals.kube.KubeReader`, plus the operator's writes
    (its finalizer requests: `deployplane.kube.finalizers`)."""

    def __init__(
        self,
        api_client: client.ApiClient | client.Configuration,
        *,
        max_in_flight: int = 32,
        backoff: Backoff | None = None,
        reload: Callable[[], client.Configuration] | None = None,
        health: FailureClock | None = None,
        sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep,
    ) -> None:
        if isinstance(api_client, client.ApiClient):
            api_client = api_client.configuration
        self._configuration: client.Configuration = api_client
        self._max_in_flight = max_in_flight
        self._http: aiohttp.ClientSession | None = None
        self._token: str | None = None
        self._token_checked = -math.inf
        self.backoff = backoff or Backoff()
        self._reload = reload
        self.health = health or FailureClock()
        self._sleep = sleep
        self.instance = instance_name()

    @classmethod
    def from_environment(cls, **kwargs: Any) -> KubernetesApi:
        """In-cluster credentials when running in a pod, else $KUBECONFIG / ~/.kube/config;
        read again on a 401."""
        return cls(load_configuration(), reload=load_configuration, **kwargs)

    def _session(self) -> aiohttp.ClientSession:
        """Built on first use, inside the running loop, at most `max_in_flight`
        connections."""
        if self._http is None:
            cfg = self._configuration
            self._http = aiohttp.ClientSession(
                base_url=cfg.host,
                connector=aiohttp.TCPConnector(limit=self._max_in_flight, ssl=ssl_context(cfg)),
                timeout=aiohttp.ClientTimeout(total=60.0),
            )
        return self._http

    async def aclose(self) -> None:
        if self._http is not None:
            await self._http.close()
        self._http = None

    async def refresh_credentials(self) -> None:
        """Log in again: a fresh configuration (the token file, the kubeconfig and its
        exec plugin read anew) and, for a new client certificate, a new session."""
        self._token_checked = -math.inf
        if self._reload is None:
            return
        fresh = await asyncio.to_thread(self._reload)
        old = self._configuration
        self._configuration = fresh
        if (fresh.host, fresh.cert_file, fresh.key_file, fresh.ssl_ca_cert) != (
            old.host,
            old.cert_file,
            old.key_file,
            old.ssl_ca_cert,
        ):
            await self.aclose()

    def _headers(self, content_type: str | None = None) -> dict[str, str]:
        headers = {"Accept": "application/json"}
        if content_type is not None:
            headers["Content-Type"] = content_type
        if authorization := self._authorization():
            headers["Authorization"] = authorization
        return headers

    def _authorization(self) -> str | None:
        """The bearer token's header value, asked of the configuration at most every
        `_TOKEN_RECHECK_SECONDS` (asking re-reads the kubeconfig and scans the
        environment for proxies: too dear to do for every request); a
        401 asks again at once (`refresh_credentials`)."""
        now = time.monotonic()
        if now >= self._token_checked + _TOKEN_RECHECK_SECONDS:
            token = bearer_token(self._configuration)
            self._token = f"Bearer {token}" if token else None
            self._token_checked = now
        return self._token

    async def _send(
        self,
        method: str,
        path: str,
        *,
        body: Any = None,
        content_type: str | None = None,
        params: Mapping[str, str] | None = None,
        allowed: Container[int] = (),
    ) -> tuple[int, bytes]:
        """The status and body of the answer; ApiException for an error answer not in
        `allowed` once the retries are spent (status 0: no answer at all)."""
        data = None if body is None else json.dumps(body)
        logged_in_again = False
        attempt = 0
        while True:
            retry_after: float | None = None
            try:
                async with self._session().request(
                    method, path, data=data, params=params, headers=self._headers(content_type)
                ) as r:
                    status, payload = r.status, await r.read()
                    retry_after = parse_retry_after(r.headers.get("Retry-After"))
            except (aiohttp.ClientError, OSError, TimeoutError) as exc:
                status, payload = 0, f"{type(exc).__name__}: {exc}".encode()
            if status == 401 and not logged_in_again:
                logged_in_again = True
                log.info("%s %s: 401, logging in again", method, path)
                await self.refresh_credentials()
                continue
            if retryable(status) and attempt < self.backoff.attempts:
                delay = self.backoff.delay(attempt, retry_after)
                attempt += 1
                self.health.failed("api", f"{method} {path}: {status or payload.decode()}")
                log.debug("%s %s: %s; again in %.2fs", method, path, status, delay)
                await self._sleep(delay)
                continue
            if retryable(status) or status == 401:
                self.health.failed("api", f"{method} {path}: {status or payload.decode()}")
            else:
                self.health.succeeded("api")
            if (status >= 400 and status not in allowed) or status == 0:
                raise ApiException(status=status, reason=_reason(payload))
            return status, payload

    async def get_path(self, path: str) -> tuple[int, bytes]:
        """GET `path`: its status (any) and body; ApiException, status 0, for no answer."""
        return await self._send("GET", path, allowed=range(400, 600))

    async def read_secret(self, namespace: str, name: str) -> Mapping[str, str] | None:
        secret = await self.read_secret_state(namespace, name)
        return None if secret is None else secret.data

    async def read_custom_status(
        self, namespace: str, plural: str, name: str
    ) -> Mapping[str, Any] | None:
        obj = await self.read_object(plural, namespace, name)
        if obj is None:
            return None
        status: Mapping[str, Any] = obj.get("status") or {}
        return status

    async def read_config_map(self, namespace: str, name: str) -> dict[str, Any] | None:
        path = f"/api/v1/namespaces/{namespace}/configmaps/{name}"
        status, payload = await self._config_map("GET", path, allowed=(404,))
        if status == 404:
            return None
        config_map: dict[str, Any] = json.loads(payload)
        return config_map

    async def create_config_map(self, namespace: str, body: Mapping[str, Any]) -> None:
        path = f"/api/v1/namespaces/{namespace}/configmaps"
        await self._config_map("POST", path, body=dict(body), content_type="application/json")

    async def patch_config_map_data(
        self, namespace: str, name: str, data: Mapping[str, str], resource_version: str | None
    ) -> None:
        """Merge-patch `data` under `resource_version` (a 409: the next pass reads the
        ConfigMap again)."""
        meta = {} if resource_version is None else {"resourceVersion": resource_version}
        await self._config_map(
            "PATCH",
            f"/api/v1/namespaces/{namespace}/configmaps/{name}",
            body={"metadata": meta, "data": dict(data)},
            content_type="application/merge-patch+json",
        )

    async def _config_map(self, method: str, path: str, **kwargs: Any) -> tuple[int, bytes]:
        """`_send`, a refusal told as `ConfigMapRefused` naming the request."""
        try:
            return await self._send(method, path, **kwargs)
        except ApiException as exc:
            raise ConfigMapRefused(method, path, exc) from exc

    async def read_namespace_labels(self, name: str) -> Mapping[str, str] | None:
        status, payload = await self._send("GET", f"/api/v1/namespaces/{name}", allowed=(404,))
        if status == 404:
            return None
        labels: Mapping[str, str] = (json.loads(payload).get("metadata") or {}).get("labels") or {}
        return labels

    async def read_object(self, plural: str, namespace: str, name: str) -> dict[str, Any] | None:
        return await self._read(_path(plural, namespace, name))

    async def list_objects(
        self, plural: str, namespace: str | None, *, limit: int = 500
    ) -> AsyncIterator[dict[str, Any]]:
        """Every object of a kind of ours, a LIST page of `limit` at a time."""
        params = {"limit": str(limit)}
        while True:
            _, payload = await self._send("GET", _collection(plural, namespace), params=params)
            page = json.loads(payload)
            for item in page.get("items") or []:
                yield item
            if not (token := (page.get("metadata") or {}).get("continue")):
                return
            params = {"limit": str(limit), "continue": token}

    async def patch_status(
        self, plural: str, namespace: str, name: str, patch: Mapping[str, Any]
    ) -> bool:
        """JSON-merge-patch the status subresource (None deletes a key). False if gone."""
        path = f"{_path(plural, namespace, name)}/status"
        status, _ = await self._send(
            "PATCH",
            path,
            body={"status": dict(patch)},
            content_type="application/merge-patch+json",
            allowed=(404,),
        )
        return status != 404

    async def post_event(self, pending: Any) -> None:
        """Create a core/v1 Event (`kube.events.event_body`)."""
        namespace, body = event_body(pending, self.instance)
        await self._send(
            "POST",
            f"/api/v1/namespaces/{namespace}/events",
            body=body,
            content_type="application/json",
        )


_TOKEN_RECHECK_SECONDS = 10.0
"""The kubernetes client re-reads an in-cluster token file once a minute; asking it
every 10 s keeps a rotated token in use within seconds of the client having it."""


def _reason(payload: bytes) -> str:
    """The apiserver's own message (a Status object), never the request body."""
    text = payload.decode(errors="replace")
    try:
        message = json.loads(text).get("message") or text
    except (ValueError, AttributeError):
        message = text
    return str(message)[:500]
