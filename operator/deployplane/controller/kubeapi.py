"""Kubernetes reads and status writes, over the official client run in worker threads.

Why not through Kopf: a daemon's `patch` is applied only when an attempt ends, while the
reconciler must make the create-pending marker and the new id durable *during* a pass.
"""

from __future__ import annotations

import asyncio
import base64
import os
from collections.abc import Mapping
from typing import Any

from kubernetes import client, config
from kubernetes.client.exceptions import ApiException

from deployplane.crd.specs import GROUP, VERSION


class KubernetesApi:
    """Implements `deployplane.externals.kube.KubeReader`, plus status patches."""

    def __init__(self, api_client: client.ApiClient) -> None:
        self._core = client.CoreV1Api(api_client)
        self._custom = client.CustomObjectsApi(api_client)

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
        try:
            await asyncio.to_thread(
                self._custom.patch_namespaced_custom_object_status,
                GROUP,
                VERSION,
                namespace,
                plural,
                name,
                {"status": dict(patch)},
                _content_type="application/merge-patch+json",
            )
        except ApiException as exc:
            if exc.status == 404:
                return False
            raise
        return True
