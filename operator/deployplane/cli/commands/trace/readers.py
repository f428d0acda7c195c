"""What `deployplane trace` reads, and nothing else: GETs only, from Kubernetes and from
the control plane. The tree is built from their answers by `tree` (pure).

Kubernetes is read with the official client (its kubeconfig loading: `--kubeconfig`,
`$KUBECONFIG`, `--kube-context`, as kubectl), through its get/list/read methods only; a
kind the cluster may not serve (KEDA's ScaledObject, Gateway API's HTTPRoute) answers
404, which means "none".
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

from deployplane.api.client import ControlPlaneClient
from deployplane.api.errors import ControlPlaneError
from deployplane.api.models import Deployment, Listener, Revision
from deployplane.cli.commands.trace.tree import Missing, Workloads
from deployplane.crd.specs import GROUP, VERSION
from deployplane.dataplane.render.context import LABEL_DEPLOYMENT_ID, LABEL_LISTENER_ID

__all__ = [
    "WORKLOAD_KINDS",
    "KubeAccess",
    "KubeError",
    "read_deployment_chain",
    "read_listener",
    "read_workloads",
]

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
    """Kubernetes could not be reached or refused: one line, no traceback."""


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
            raise KubeError(f"{what}: {exc.status} {exc.reason}") from exc
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


def read_workloads(kube: KubeAccess, namespace: str, selector: str) -> Workloads:
    """Every data-plane object matching `selector` in `namespace`; unreadable (no
    access, no such cluster) is reported, not raised."""
    try:
        return Workloads(namespace, kube.list_labelled(namespace, selector))
    except KubeError as exc:
        return Workloads(namespace, Missing("NotReachable", str(exc)))


def deployment_selector(deployment_id: str) -> str:
    return f"{LABEL_DEPLOYMENT_ID}={deployment_id}"


def listener_selector(listener_id: str) -> str:
    return f"{LABEL_LISTENER_ID}={listener_id}"


def _missing(exc: ControlPlaneError, what: str) -> Missing:
    if exc.status_code == 404:
        return Missing("NotFound", f"{what} not found on the control plane")
    if exc.status_code is None:
        return Missing("Unreachable", str(exc))
    return Missing(f"Http{exc.status_code}", str(exc))


@dataclass
class DeploymentChain:
    deployment: Deployment | Missing
    revisions: dict[str, Revision | Missing]
    listener: Listener | Missing | None


async def read_deployment_chain(api: ControlPlaneClient, deployment_id: str) -> DeploymentChain:
    """The deployment, its latest and active revisions and its listener: GETs only."""
    try:
        deployment = await api.get_deployment(deployment_id)
    except ControlPlaneError as exc:
        return DeploymentChain(_missing(exc, f"deployment {deployment_id}"), {}, None)
    revisions: dict[str, Revision | Missing] = {}
    for rid in {deployment.latest_revision_id, deployment.active_revision_id} - {None}:
        try:
            revisions[str(rid)] = await api.get_revision(deployment_id, str(rid))
        except ControlPlaneError as exc:
            revisions[str(rid)] = _missing(exc, f"revision {rid}")
    listener_id = None
    if deployment.source_config is not None:
        listener_id = deployment.source_config.listener_id
    listener = None if listener_id is None else await read_listener(api, str(listener_id))
    return DeploymentChain(deployment, revisions, listener)


async def read_listener(api: ControlPlaneClient, listener_id: str) -> Listener | Missing:
    try:
        return await api.get_listener(listener_id)
    except ControlPlaneError as exc:
        return _missing(exc, f"listener {listener_id}")
