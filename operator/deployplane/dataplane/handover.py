"""Applying a Deployment whose replica count is its autoscaler's (render/scaling.py),
and deleting the autoscalers a render no longer makes.

Server-side apply removes a field when the last manager that owned it applies without
it: a Deployment's `replicas` would then fall back to its default, 1. So the agent's
manager never gives the count up while it owns it alone:

1. a Deployment that does not exist yet is created at its minimum (`Scaled.initial`)
   by the agent's manager (a create needs the whole object);
2. while the agent's manager owns `spec.replicas` (just created, or applied by a render
   that carried a count: autoscaling turned on since, or an agent that rendered every
   count), `SCALE_MANAGER` applies the count the Deployment has now, unforced, and so
   owns it too (a conflict means the autoscaler has changed it meanwhile: the count is
   the autoscaler's already);
3. the agent's manager applies the Deployment without `replicas`, giving its share up.

The count then stays as it is until the autoscaler writes its own (the HPA controller
and KEDA write the scale subresource, which takes the field from every other manager),
and no apply of the agent sets it again. Turned off again, the render carries the count
and the agent's forced apply takes it back, once the autoscaler left behind is deleted
(`retire`), so that nothing scales it away again.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from deployplane.dataplane.kube import FIELD_MANAGER, SCALE_MANAGER, Cluster, ClusterError
from deployplane.dataplane.render import Rendered, Scaled

__all__ = ["apply_workload", "owns_replicas", "retire"]

Obj = dict[str, Any]


def owns_replicas(deployment: Mapping[str, Any], manager: str) -> bool:
    """Whether `manager`'s applies own the Deployment's `spec.replicas` (its entry in
    `metadata.managedFields`)."""
    for entry in deployment["metadata"].get("managedFields") or []:
        if entry.get("manager") != manager or entry.get("operation") != "Apply":
            continue
        if entry.get("subresource"):
            continue
        spec = (entry.get("fieldsV1") or {}).get("f:spec") or {}
        if "f:replicas" in spec:
            return True
    return False


async def apply_workload(cluster: Cluster, deployment: Obj, scaled: Scaled) -> Obj:
    """Applies `deployment` (rendered without `replicas`) so that its count is created at
    `scaled.initial` and never set again; returns it as the cluster answered."""
    meta = deployment["metadata"]
    live = await cluster.get("apps/v1", "Deployment", meta["namespace"], meta["name"])
    if live is None:
        spec = {**deployment["spec"], "replicas": scaled.initial}
        live = await cluster.apply({**deployment, "spec": spec})
    if owns_replicas(live, FIELD_MANAGER):
        await _share_count(cluster, live)
    return await cluster.apply(deployment)


async def _share_count(cluster: Cluster, live: Mapping[str, Any]) -> None:
    meta = live["metadata"]
    count = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": meta["name"], "namespace": meta["namespace"]},
        "spec": {"replicas": (live.get("spec") or {}).get("replicas", 1)},
    }
    try:
        await cluster.apply(count, field_manager=SCALE_MANAGER, force=False)
    except ClusterError as exc:
        if exc.status != 409:  # 409: the autoscaler has changed the count: it owns it
            raise


async def retire(cluster: Cluster, rendered: Rendered, owner_uid: str) -> None:
    """Deletes each autoscaler the render no longer makes (`Rendered.retired`) that the
    deployment's owner owns: an autoscaler of someone else's is left alone."""
    for item in rendered.retired:
        found = await cluster.get(item.api_version, item.kind, rendered.namespace, item.name)
        if found is None or found["metadata"].get("deletionTimestamp"):
            continue
        refs = found["metadata"].get("ownerReferences") or []
        if any(ref.get("uid") == owner_uid for ref in refs):
            await cluster.delete(item.api_version, item.kind, rendered.namespace, item.name)
