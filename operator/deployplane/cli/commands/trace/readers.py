"""What `deployplane trace` reads, and nothing else: GETs only, from Kubernetes and from
the control plane. The tree is built from their answers by `tree` (pure).

Kubernetes is read through `deployplane.cli.commands.kube` (the official client, reached
as kubectl reaches it), GETs and lists only.
"""

from __future__ import annotations

from dataclasses import dataclass

from deployplane.api.client import ControlPlaneClient
from deployplane.api.dataplane import LABEL_DEPLOYMENT_ID, LABEL_LISTENER_ID
from deployplane.api.errors import ControlPlaneError
from deployplane.api.models import Deployment, Listener, Revision
from deployplane.cli.commands.kube import WORKLOAD_KINDS, KubeAccess, KubeError
from deployplane.cli.commands.trace.tree import Missing, Workloads

__all__ = [
    "WORKLOAD_KINDS",
    "KubeAccess",
    "KubeError",
    "read_deployment_chain",
    "read_listener",
    "read_workloads",
]


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
