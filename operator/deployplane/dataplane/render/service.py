"""The Service in front of one component's pods (agent server, Redis, PostgreSQL)."""

from __future__ import annotations

from deployplane.dataplane.render.context import Context
from deployplane.dataplane.render.model import Obj


def service(ctx: Context, component: str, port: int, *, headless: bool = False) -> Obj:
    spec: Obj = {
        "selector": ctx.selector(component),
        "ports": [{"name": "tcp", "port": port, "targetPort": port, "protocol": "TCP"}],
    }
    if headless:
        spec["clusterIP"] = "None"
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": ctx.metadata(ctx.name(component), component),
        "spec": spec,
    }
