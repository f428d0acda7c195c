"""Kubernetes reads, and every write of the operator: status patches, the object patch
of the finalizer and create-pending marker, the finalizer's removal, Events.

Why not through Kopf: Kopf applies a handler's `patch` only when the handler returns,
while the reconciler must make the create-pending marker durable *during* a pass, before
the create; and the workers that run the passes are not Kopf handlers at all.

The writes, the hot path (three per new resource, and two Events), go over one aiohttp
session (Kopf's own HTTP client, so no new dependency) on the event loop, authenticated
from the official client's configuration. Status patches used to go through the
official (blocking) client in `asyncio.to_thread`, and with 1,000 new
resources the default executor's six threads became the queue every pass waited in: the
create-pending marker of the median resource was written 17 s after it was applied
(bench/operator.py). The rare reads (Secrets, a Listener's status) stay on threads.
"""

from __future__ import annotations

import asyncio
import base64
import json
import math
import os
import ssl
import time
from collections.abc import AsyncIterator, Container, Mapping
from typing import Any

import aiohttp
from kubernetes import client, config
from kubernetes.client.exceptions import ApiException

from deployplane.crd.specs import GROUP, VERSION
from deployplane.reconcile.eventrecorder import PendingEvent
from deployplane.reconcile.informer import Page, WatchExpired


class KubernetesApi:
    """Implements `deployplane.externals.kube.KubeReader`, plus status patches."""

    def __init__(self, api_client: client.ApiClient, *, max_in_flight: int = 32) -> None:
        self._configuration: client.Configuration = api_client.configuration
        self._core = client.CoreV1Api(api_client)
        self._custom = client.CustomObjectsApi(api_client)
        self._max_in_flight = max_in_flight
        self._http: aiohttp.ClientSession | None = None
        self._watch_http: aiohttp.ClientSession | None = None
        self._token: str | None = None
        self._token_checked = -math.inf

    def _session(self) -> aiohttp.ClientSession:
        """Requests: built on first use, inside the running loop, at most
        `max_in_flight` connections."""
        if self._http is None:
            self._http = self._new_session(self._max_in_flight)
        return self._http

    def _watch_session(self) -> aiohttp.ClientSession:
        """Watch streams: a pool of their own, without a limit, as each holds its
        connection open for minutes (one per kind and namespace watched); in the
        requests' pool, many namespaces would take every connection the writes need."""
        if self._watch_http is None:
            self._watch_http = self._new_session(0)
        return self._watch_http

    def _new_session(self, limit: int) -> aiohttp.ClientSession:
        cfg = self._configuration
        verify: ssl.SSLContext | bool = False
        if cfg.verify_ssl:
            verify = ssl.create_default_context(cafile=cfg.ssl_ca_cert)
            if cfg.cert_file:
                verify.load_cert_chain(cfg.cert_file, cfg.key_file)
        return aiohttp.ClientSession(
            base_url=cfg.host,
            connector=aiohttp.TCPConnector(limit=limit, ssl=verify),
            timeout=aiohttp.ClientTimeout(total=60.0),
        )

    async def aclose(self) -> None:
        for session in (self._http, self._watch_http):
            if session is not None:
                await session.close()
        self._http = self._watch_http = None

    @classmethod
    def from_environment(cls) -> KubernetesApi:
        """In-cluster credentials when running in a pod, else $KUBECONFIG / ~/.kube/config."""
        configuration = client.Configuration()
        try:
            config.load_incluster_config(client_configuration=configuration)
        except config.ConfigException:
            # Read $KUBECONFIG now: the client's own default was fixed at its import time.
            config.load_kube_config(
                config_file=os.environ.get("KUBECONFIG"), client_configuration=configuration
            )
        # Many resources reconcile at once; the default pool of 4 would serialize them.
        configuration.connection_pool_maxsize = 32
        return cls(client.ApiClient(configuration))

    async def list_page(
        self, plural: str, namespace: str | None, *, limit: int, continue_token: str | None
    ) -> Page:
        """One page of a listing of our kind (`deployplane.reconcile.informer`)."""
        params = {"limit": str(limit)}
        if continue_token:
            params["continue"] = continue_token
        async with self._session().get(
            _collection(plural, namespace), params=params, headers=self._headers()
        ) as r:
            await _raise_for_status(r, expired="the listing's continue token expired")
            listing = await r.json()
        meta = listing.get("metadata") or {}
        return Page(
            list(listing.get("items") or []),
            str(meta.get("resourceVersion") or ""),
            meta.get("continue") or None,
        )

    async def watch_events(
        self, plural: str, namespace: str | None, *, resource_version: str, timeout_seconds: int
    ) -> AsyncIterator[dict[str, Any]]:
        """The watch events of our kind from `resource_version`, until the server ends
        the stream (after `timeout_seconds`) or the connection drops."""
        params = {
            "watch": "true",
            "allowWatchBookmarks": "true",
            "resourceVersion": resource_version,
            "timeoutSeconds": str(timeout_seconds),
        }
        # No total timeout: the stream is meant to stay open; a silent one is cut after
        # the server's own timeout plus a margin.
        timeout = aiohttp.ClientTimeout(total=None, sock_read=timeout_seconds + 30)
        async with self._watch_session().get(
            _collection(plural, namespace), params=params, headers=self._headers(), timeout=timeout
        ) as r:
            await _raise_for_status(r, expired=f"resourceVersion {resource_version} is too old")
            # One JSON document per line; an object may be longer than the 64 KiB line
            # limit of `r.content.readline`, so the chunks are split here.
            buffer = b""
            async for chunk in r.content.iter_any():
                buffer += chunk
                *lines, buffer = buffer.split(b"\n")
                for line in lines:
                    if line.strip():
                        yield json.loads(line)

    async def read_secret(self, namespace: str, name: str) -> Mapping[str, str] | None:
        try:
            secret = await asyncio.to_thread(self._core.read_namespaced_secret, name, namespace)
        except ApiException as exc:
            if exc.status == 404:
                return None
            raise
        data = secret.data or {}
        return {k: base64.b64decode(v).decode() for k, v in data.items()}

    async def read_custom_status(
        self, namespace: str, plural: str, name: str
    ) -> Mapping[str, Any] | None:
        try:
            obj = await asyncio.to_thread(
                self._custom.get_namespaced_custom_object, GROUP, VERSION, namespace, plural, name
            )
        except ApiException as exc:
            if exc.status == 404:
                return None
            raise
        status: Mapping[str, Any] = obj.get("status") or {}
        return status

    def _headers(self, content_type: str | None = None) -> dict[str, str]:
        headers = {"Accept": "application/json"}
        if content_type is not None:
            headers["Content-Type"] = content_type
        if authorization := self._authorization():
            headers["Authorization"] = authorization
        return headers

    def _authorization(self) -> str | None:
        """The bearer token's header value, asked of the configuration at most every
        `_TOKEN_RECHECK_SECONDS`: it refreshes expiring (in-cluster, exec-plugin) tokens
        when asked, and asking re-reads the kubeconfig and scans the environment for
        proxies, which was ~4% of the operator's CPU when asked per request.
        auth_settings() knows where the client keeps a token ("BearerToken", with its
        "Bearer " prefix); a client certificate, if any, is in the SSL context instead."""
        now = time.monotonic()
        if now >= self._token_checked + _TOKEN_RECHECK_SECONDS:
            bearer = self._configuration.auth_settings().get("BearerToken") or {}
            self._token = bearer.get("value") or None
            self._token_checked = now
        return self._token

    async def _patch(self, path: str, body: Any, content_type: str) -> int:
        """PATCH `path`; the HTTP status (404 and 409/422 are the caller's to judge)."""
        http = self._session()
        data = json.dumps(body)
        async with http.patch(path, data=data, headers=self._headers(content_type)) as r:
            await _raise_for_status(r, allowed=(404, 409, 422))
            await r.read()
            return r.status

    async def patch_status(
        self, plural: str, namespace: str, name: str, patch: Mapping[str, Any]
    ) -> bool:
        """JSON-merge-patch the status subresource (None deletes a key). False if gone."""
        path = f"{_path(plural, namespace, name)}/status"
        return await self._merge(path, {"status": dict(patch)})

    async def patch_object(
        self, plural: str, namespace: str, name: str, patch: Mapping[str, Any]
    ) -> bool:
        """JSON-merge-patch the object itself (metadata: finalizers, annotations). False
        if gone."""
        return await self._merge(_path(plural, namespace, name), dict(patch))

    async def _merge(self, path: str, body: Mapping[str, Any]) -> bool:
        code = await self._patch(path, body, "application/merge-patch+json")
        if code in (409, 422):
            raise ApiException(status=code, reason=f"merge patch refused ({code})")
        return code != 404

    async def remove_finalizer(
        self, plural: str, namespace: str, name: str, finalizer: str
    ) -> bool:
        """Take `finalizer` off the object, leaving any other's. A JSON patch guarded by a
        test of the list as just read, so a finalizer somebody adds meanwhile is never
        lost: on a refusal (the list changed) read again and retry. False if gone."""
        path = _path(plural, namespace, name)
        http = self._session()
        for _ in range(_FINALIZER_RETRIES):
            async with http.get(path, headers=self._headers()) as r:
                if r.status == 404:
                    return False
                await _raise_for_status(r)
                current = list((await r.json()).get("metadata", {}).get("finalizers") or [])
            if finalizer not in current:
                return True
            ops = [
                {"op": "test", "path": "/metadata/finalizers", "value": current},
                {
                    "op": "replace",
                    "path": "/metadata/finalizers",
                    "value": [f for f in current if f != finalizer],
                },
            ]
            code = await self._patch(path, ops, "application/json-patch+json")
            if code == 404:
                return False
            if code < 400:
                return True
        raise ApiException(status=409, reason=f"finalizers of {namespace}/{name} keep changing")

    async def post_event(self, pending: PendingEvent) -> None:
        """Create a core/v1 Event (the recorder's, `deployplane.reconcile.eventrecorder`),
        with the fields and the component name Kopf's poster used, over this session:
        the operator's writes share one connection pool."""
        involved, event = pending.involved, pending.event
        meta = involved.get("metadata") or {}
        namespace = meta.get("namespace") or "default"
        message = event.message
        if len(message) > _EVENT_MESSAGE_MAX:
            half = _EVENT_MESSAGE_MAX // 2
            message = f"{message[: half - 1]}...{message[-(half - 2) :]}"
        when = pending.recorded_at.isoformat()
        body = {
            "metadata": {"namespace": namespace, "generateName": "kopf-event-"},
            "action": "Action?",
            "type": event.type,
            "reason": event.reason,
            "message": message,
            "reportingComponent": "kopf",
            "reportingInstance": "dev",
            "source": {"component": "kopf"},
            "involvedObject": {
                "apiVersion": involved.get("apiVersion"),
                "kind": involved.get("kind"),
                "name": meta.get("name"),
                "uid": meta.get("uid"),
                "namespace": namespace,
            },
            "firstTimestamp": when,
            "lastTimestamp": when,
            "eventTime": when,
        }
        path = f"/api/v1/namespaces/{namespace}/events"
        headers = self._headers("application/json")
        async with self._session().post(path, data=json.dumps(body), headers=headers) as r:
            await _raise_for_status(r)
            await r.read()


_FINALIZER_RETRIES = 5
_TOKEN_RECHECK_SECONDS = 10.0
"""The kubernetes client re-reads an in-cluster token file once a minute; asking it
every 10 s keeps a rotated token in use within seconds of the client having it."""
_EVENT_MESSAGE_MAX = 1024


async def _raise_for_status(
    r: aiohttp.ClientResponse, *, expired: str | None = None, allowed: Container[int] = ()
) -> None:
    """An error answer as an ApiException; with `expired` (what expired), 410 Gone as
    `WatchExpired`; the statuses in `allowed` are the caller's to judge."""
    if r.status == 410 and expired is not None:
        raise WatchExpired(expired)
    if r.status >= 400 and r.status not in allowed:
        raise ApiException(status=r.status, reason=(await r.text())[:500])


def _collection(plural: str, namespace: str | None) -> str:
    if namespace is None:
        return f"/apis/{GROUP}/{VERSION}/{plural}"
    return f"/apis/{GROUP}/{VERSION}/namespaces/{namespace}/{plural}"


def _path(plural: str, namespace: str, name: str) -> str:
    return f"/apis/{GROUP}/{VERSION}/namespaces/{namespace}/{plural}/{name}"
