"""The outputs' ConfigMap port (`reconcile.outputs.ConfigMapStore`) over the Kubernetes
API: a request the apiserver refuses (`kube.api.ConfigMapRefused`) becomes the port's
`ConfigMapError`. Here, because kube/ is the floor below reconcile/ and never imports
it, and reconcile/ knows no Kubernetes client."""

from __future__ import annotations

from collections.abc import Awaitable, Mapping
from typing import Any, TypeVar

from deployplane.kube.api import ConfigMapRefused, KubernetesApi
from deployplane.reconcile.outputs import ConfigMapError

T = TypeVar("T")


class OutputsStore:
    """`ConfigMapStore` for `reconcile.outputs`, over one `KubernetesApi`."""

    def __init__(self, kube: KubernetesApi) -> None:
        self._kube = kube

    async def read_config_map(self, namespace: str, name: str) -> dict[str, Any] | None:
        return await _told(self._kube.read_config_map(namespace, name))

    async def create_config_map(self, namespace: str, body: Mapping[str, Any]) -> None:
        await _told(self._kube.create_config_map(namespace, body))

    async def patch_config_map_data(
        self, namespace: str, name: str, data: Mapping[str, str], resource_version: str | None
    ) -> None:
        await _told(self._kube.patch_config_map_data(namespace, name, data, resource_version))


async def _told(call: Awaitable[T]) -> T:
    try:
        return await call
    except ConfigMapRefused as exc:
        raise ConfigMapError(str(exc)) from exc
