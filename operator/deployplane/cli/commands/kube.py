"""Kubernetes as kubectl reaches it, for the commands that read it (`trace`, `export`):
GETs and lists only.

The official client, with its kubeconfig loading (`--kubeconfig`, `$KUBECONFIG`,
`--kube-context`, as kubectl), through its get/list/read methods only; a kind the
cluster may not serve (KEDA's ScaledObject, Gateway API's HTTPRoute, this project's own
kinds before the CRDs are installed) answers 404, which means "none". Imported by a
command's body, when it runs: the client is the heaviest import of the CLI.
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any

import yaml
from kubernetes import client, config
from kubernetes.client.exceptions import ApiException
from kubernetes.config.config_exception import ConfigException

from deployplane.kube.paths import GROUP, VERSION

__all__ = ["TIMEOUT", "WORKLOAD_KINDS", "KubeAccess", "KubeError"]

# The data plane's object kinds `trace` shows (deployplane.dataplane.render): the owner
# ConfigMap, the workloads, their Services, autoscalers and routes. Not the Secrets
# (values), NetworkPolicies or TriggerAuthentications (nothing to report). Built-in
# kinds: (API class, its list method); custom ones: (group, version, plural).
_BUILT_IN: tuple[tuple[str, type[Any], str], ...] = (
    ("ConfigMap", client.CoreV1Api, "list_namespaced_config_map"),
    ("Deployment", client.AppsV1Api, "list_namespaced_deployment"),
    ("StatefulSet", client.AppsV1Api, "list_namespaced_stateful_set"),
    ("Service", client.CoreV1Api, "list_namespaced_service"),
    (
        "HorizontalPodAutoscaler",
        client.AutoscalingV2Api,
        "list_namespaced_horizontal_pod_autoscaler",
    ),
    ("Ingress", client.NetworkingV1Api, "list_namespaced_ingress"),
)
_CUSTOM: tuple[tuple[str, str, str, str], ...] = (
    ("ScaledObject", "keda.sh", "v1alpha1", "scaledobjects"),
    ("HTTPRoute", "gateway.networking.k8s.io", "v1", "httproutes"),
)
WORKLOAD_KINDS = tuple(k for k, *_ in _BUILT_IN) + tuple(k for k, *_ in _CUSTOM)


TIMEOUT = 15  # seconds per Kubernetes request


class KubeError(Exception):
    """Kubernetes could not be reached or refused: one line, no traceback. `status`:
    the HTTP status it answered, if it answered."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


@dataclass
class KubeAccess:
    """GETs against one cluster, as kubectl would reach it."""

    api: client.ApiClient
    namespace: str
    """The kubeconfig context's namespace (kubectl's default for `-n`)."""

    @classmethod
    def load(cls, kubeconfig: str | None, context: str | None) -> KubeAccess:
        try:
            api = config.new_client_from_config(config_file=kubeconfig, context=context)
            _, active = config.list_kube_config_contexts(config_file=kubeconfig)
        except (ConfigException, OSError) as exc:
            raise KubeError(f"kubeconfig: {exc}") from exc
        except yaml.YAMLError as exc:
            raise KubeError(f"kubeconfig: not valid YAML: {' '.join(str(exc).split())}") from exc
        except (TypeError, ValueError, KeyError, AttributeError) as exc:
            # the client's loader indexes the file's YAML without checking its shape
            raise KubeError(f"kubeconfig: not a kubeconfig ({type(exc).__name__}: {exc})") from exc
        if context:
            contexts, _ = config.list_kube_config_contexts(config_file=kubeconfig)
            active = next((c for c in contexts if c.get("name") == context), active)
        namespace = (active or {}).get("context", {}).get("namespace") or "default"
        return cls(api, namespace)

    def _call(self, what: str, read: Callable[[], Any]) -> Any:
        """`read()`'s answer as plain camelCase data; None on 404. Else KubeError."""
        try:
            answer = read()
        except ApiException as exc:
            if exc.status == 404:
                return None
            raise KubeError(f"{what}: {exc.status} {exc.reason}", exc.status) from exc
        except Exception as exc:  # urllib3's connection errors, TLS: one line
            raise KubeError(f"{what}: {type(exc).__name__}: {exc}") from exc
        return self.api.sanitize_for_serialization(answer)

    def custom_resource(self, plural: str, namespace: str, name: str) -> Mapping[str, Any] | None:
        custom = client.CustomObjectsApi(self.api)
        found: Mapping[str, Any] | None = self._call(
            f"get {plural}/{name} in {namespace}",
            lambda: custom.get_namespaced_custom_object(
                GROUP, VERSION, namespace, plural, name, _request_timeout=TIMEOUT
            ),
        )
        return found

    def secret_data(self, namespace: str, name: str) -> Mapping[str, str] | None:
        """A Secret's decoded data (a connectionRef's url/apiKey/tenantId)."""
        core = client.CoreV1Api(self.api)
        secret = self._call(
            f"get secret {name} in {namespace}",
            lambda: core.read_namespaced_secret(name, namespace, _request_timeout=TIMEOUT),
        )
        if secret is None:
            return None
        raw: Mapping[str, str] = secret.get("data") or {}
        return {k: base64.b64decode(v).decode() for k, v in raw.items()}

    def custom_resources(self, plural: str, namespace: str | None) -> list[Mapping[str, Any]]:
        """This project's objects of one kind, in `namespace` or (None) in every
        namespace; none when the cluster does not serve the kind."""
        custom = client.CustomObjectsApi(self.api)
        if namespace is None:
            read = partial(
                custom.list_cluster_custom_object, GROUP, VERSION, plural, _request_timeout=TIMEOUT
            )
        else:
            read = partial(
                custom.list_namespaced_custom_object,
                GROUP,
                VERSION,
                namespace,
                plural,
                _request_timeout=TIMEOUT,
            )
        where = "every namespace" if namespace is None else namespace
        listed = self._call(f"list {plural} in {where}", read)
        return list((listed or {}).get("items") or [])

    def list_labelled(self, namespace: str, selector: str) -> list[Mapping[str, Any]]:
        """The data plane's objects matching `selector`, each with its `kind`; a kind the
        cluster does not serve (404) has none."""
        found: list[Mapping[str, Any]] = []
        for kind, api_class, method in _BUILT_IN:
            lister = getattr(api_class(self.api), method)
            listed = self._call(
                f"list {kind} in {namespace}",
                partial(lister, namespace, label_selector=selector, _request_timeout=TIMEOUT),
            )
            found += [{**item, "kind": kind} for item in (listed or {}).get("items") or []]
        custom = client.CustomObjectsApi(self.api)
        for kind, group, version, plural in _CUSTOM:
            listed = self._call(
                f"list {kind} in {namespace}",
                partial(
                    custom.list_namespaced_custom_object,
                    group,
                    version,
                    namespace,
                    plural,
                    label_selector=selector,
                    _request_timeout=TIMEOUT,
                ),
            )
            found += [{**item, "kind": kind} for item in (listed or {}).get("items") or []]
        return found
