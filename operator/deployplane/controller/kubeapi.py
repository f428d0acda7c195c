"""Kubernetes reads and status writes.

Why not through Kopf: a daemon's `patch` is applied only when an attempt ends, while the
reconciler must make the create-pending marker durable *during* a pass, before the create.

Status patches, the hot path (several per new resource), go over aiohttp (Kopf's own HTTP
client, so no new dependency) on the event loop, authenticated from the official client's
configuration. They used to go
through the official (blocking) client in `asyncio.to_thread`, and with 1,000 new
resources the default executor's six threads became the queue every pass waited in: the
create-pending marker of the median resource was written 17 s after it was applied
(bench/operator.py). The rare reads (Secrets, a Listener's status) stay on threads.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import ssl
from collections.abc import Mapping
from typing import Any

import aiohttp
from kubernetes import client, config
from kubernetes.client.exceptions import ApiException

from deployplane.crd.specs import GROUP, VERSION


class KubernetesApi:
    """Implements `deployplane.externals.kube.KubeReader`, plus status patches."""

    def __init__(self, api_client: client.ApiClient, *, max_in_flight: int = 32) -> None:
        self._configuration: client.Configuration = api_client.configuration
        self._core = client.CoreV1Api(api_client)
        self._custom = client.CustomObjectsApi(api_client)
        self._max_in_flight = max_in_flight
        self._http: aiohttp.ClientSession | None = None

    def _session(self) -> aiohttp.ClientSession:
        """Built on first use, inside the running loop, from the same configuration."""
        if self._http is None:
            cfg = self._configuration
            verify: ssl.SSLContext | bool = False
            if cfg.verify_ssl:
                verify = ssl.create_default_context(cafile=cfg.ssl_ca_cert)
                if cfg.cert_file:
                    verify.load_cert_chain(cfg.cert_file, cfg.key_file)
            self._http = aiohttp.ClientSession(
                base_url=cfg.host,
                connector=aiohttp.TCPConnector(limit=self._max_in_flight, ssl=verify),
                timeout=aiohttp.ClientTimeout(total=60.0),
            )
        return self._http

    async def aclose(self) -> None:
        if self._http is not None:
            await self._http.close()
            self._http = None

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

    async def patch_status(
        self, plural: str, namespace: str, name: str, patch: Mapping[str, Any]
    ) -> bool:
        """JSON-merge-patch the status subresource (None deletes a key). False if gone."""
        http = self._session()
        headers = {"Content-Type": "application/merge-patch+json", "Accept": "application/json"}
        # Asked per request: the configuration refreshes expiring (in-cluster) tokens.
        # auth_settings() knows where the client keeps a token ("BearerToken", with its
        # "Bearer " prefix); a client certificate, if any, is in the SSL context instead.
        bearer = self._configuration.auth_settings().get("BearerToken") or {}
        if bearer.get("value"):
            headers["Authorization"] = bearer["value"]
        path = f"/apis/{GROUP}/{VERSION}/namespaces/{namespace}/{plural}/{name}/status"
        async with http.patch(path, data=json.dumps({"status": dict(patch)}), headers=headers) as r:
            if r.status == 404:
                return False
            if r.status >= 400:
                raise ApiException(status=r.status, reason=(await r.text())[:500])
            await r.read()
        return True
