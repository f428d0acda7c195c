"""The tree of one resource: what it leads to on the control plane and in the
listener's cluster, each piece read (GETs only) or a `Missing` line with its reason."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from deployplane.api.dataplane import NoNamespace, namespace_for
from deployplane.api.models import Listener
from deployplane.cli.commands.trace import readers, tree
from deployplane.cli.commands.trace.controlplane import control_plane, settings_for
from deployplane.cli.commands.trace.readers import KubeAccess, KubeError
from deployplane.cli.commands.trace.tree import Missing, Node, Workloads

__all__ = ["trace_agentdeployment", "trace_listener"]


def trace_agentdeployment(kube: KubeAccess, namespace: str, obj: Mapping[str, Any]) -> Node:
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    deployment_id = status.get("deploymentId") or spec.get("deploymentId")
    listener_ref = ((spec.get("sourceConfig") or {}).get("listenerRef") or {}).get("name")
    listener_cr = None
    if listener_ref:
        try:
            listener_cr = kube.custom_resource("listeners", namespace, listener_ref)
        except KubeError:
            listener_cr = None
    if not deployment_id:
        missing = Missing("NoId", "the operator has not created or found it yet")
        return tree.build_agentdeployment(obj, missing, {}, None, None, missing)
    settings = settings_for(kube, namespace, obj)
    if isinstance(settings, Missing):
        return tree.build_agentdeployment(obj, settings, {}, None, None, settings)
    chain = control_plane(settings, lambda c: readers.read_deployment_chain(c, str(deployment_id)))
    workloads: Workloads | Missing = Missing("NoListener")
    if not isinstance(chain.deployment, Missing) and isinstance(chain.listener, Listener):
        try:
            where = namespace_for(chain.deployment, chain.listener)
        except NoNamespace as exc:
            workloads = Missing("NoNamespace", str(exc))
        else:
            selector = readers.deployment_selector(str(deployment_id))
            workloads = readers.read_workloads(kube, where, selector)
    return tree.build_agentdeployment(
        obj, chain.deployment, chain.revisions, chain.listener, listener_cr, workloads
    )


def trace_listener(kube: KubeAccess, namespace: str, obj: Mapping[str, Any]) -> Node:
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    listener_id = status.get("listenerId") or spec.get("listenerId")
    if not listener_id:
        missing = Missing("NoId", "the operator has not created or found it yet")
        return tree.build_listener(obj, missing, missing)
    settings = settings_for(kube, namespace, obj)
    if isinstance(settings, Missing):
        return tree.build_listener(obj, settings, settings)
    listener = control_plane(settings, lambda c: readers.read_listener(c, str(listener_id)))
    if isinstance(listener, Missing):
        return tree.build_listener(obj, listener, listener)
    config = listener.compute_config
    namespaces = (config.k8s_namespaces if config else None) or []
    selector = readers.listener_selector(str(listener_id))
    workloads = [readers.read_workloads(kube, ns, selector) for ns in namespaces]
    return tree.build_listener(obj, listener, workloads)
