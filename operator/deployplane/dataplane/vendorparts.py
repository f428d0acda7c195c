"""What the agent does for the vendor data plane's optional parts (docs/dataplane.md,
"Settings"): refuse kinds the cluster does not serve, find the route among the rendered
objects, and bring a deployed deployment's route up to the current settings.

Apart from agent.py so that the loop stays about rounds and reports.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from deployplane.api.models import Deployment, Listener
from deployplane.dataplane.kube import Cluster
from deployplane.dataplane.render import (
    ANNOTATION_ROUTE,
    DataPlaneSettings,
    Rendered,
    render_route,
    with_owner,
)

__all__ = ["ROUTE_KINDS", "refresh_route", "route_of", "unserved"]

Obj = dict[str, Any]

log = logging.getLogger(__name__)

ROUTE_KINDS = ("Ingress", "HTTPRoute")

# API groups every cluster serves; the kinds of any other (KEDA's, the Gateway API's)
# are looked up before an apply, so a missing CRD is the revision's clear failure.
_BUILT_IN = frozenset({"v1", "apps/v1", "autoscaling/v2", "networking.k8s.io/v1"})
_MISSING_HINT = {
    "keda.sh": "install KEDA, or set the agent's autoscaler to hpa",
    "gateway.networking.k8s.io": "install the Gateway API CRDs, or set the agent's routing "
    "to ingress or none",
}


async def unserved(cluster: Cluster, rendered: Rendered) -> str | None:
    """The failure for a rendered kind the cluster does not serve (a CRD absent):
    never a silent fallback to another autoscaler or no route."""
    kinds = {(o["apiVersion"], o["kind"]) for o in rendered.objects}
    for api_version, kind in sorted(kinds):
        if api_version in _BUILT_IN or await cluster.served(api_version, kind):
            continue
        group = api_version.split("/")[0]
        return (
            f"the cluster does not serve {kind} ({api_version}): "
            f"{_MISSING_HINT.get(group, 'install its CRD')}"
        )
    return None


def route_of(objects: Sequence[Obj]) -> Obj | None:
    return next((o for o in objects if o["kind"] in ROUTE_KINDS), None)


async def refresh_route(
    cluster: Cluster,
    deployment: Deployment,
    listener: Listener,
    settings: DataPlaneSettings,
    owner: Obj,
) -> str | None:
    """The route as the settings say now: a route rendered with other settings (a
    changed base path or host) is applied again, alone. One read when it is current;
    nothing else is rewritten. Returns the route's URL (None without routing)."""
    route, url = render_route(deployment, listener, settings)
    if route is None:
        return None
    meta = route["metadata"]
    current = await cluster.get(route["apiVersion"], route["kind"], meta["namespace"], meta["name"])
    annotations = ((current or {}).get("metadata") or {}).get("annotations") or {}
    if annotations.get(ANNOTATION_ROUTE) != meta["annotations"][ANNOTATION_ROUTE]:
        (owned,) = with_owner([route], str(owner["metadata"]["uid"]))
        await cluster.apply(owned)
        log.info("deployment %s: route now at %s", deployment.id, url)
    return url
