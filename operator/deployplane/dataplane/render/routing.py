"""The way in from outside: an Ingress or a Gateway API HTTPRoute per deployment (the
agent's `routing`), and the URL it exposes.

Path routing: every deployment under `/<base path>/<deployment id>` on one host. Host
routing: the host setting is a template with `{id}`, one host per deployment, path
`/<base path>`. The route carries the hash of its own spec (`ANNOTATION_ROUTE`), so the
agent can tell a route rendered with other settings (a changed base path) with one read
and re-apply only the route (agent.py, `repair`).
"""

from __future__ import annotations

import hashlib
import json

from deployplane.dataplane.render.context import SERVER, SERVER_PORT, Context
from deployplane.dataplane.render.model import Obj
from deployplane.dataplane.render.settings import Routing

ANNOTATION_ROUTE = "deployplane.io/route"
ANNOTATION_URL = "deployplane.io/url"
GATEWAY_API_VERSION = "gateway.networking.k8s.io/v1"


def host_and_path(ctx: Context) -> tuple[str, str]:
    settings = ctx.settings
    prefix = f"/{settings.prefix}" if settings.prefix else ""
    if "{id}" in settings.host:
        return settings.host.replace("{id}", ctx.deployment_id), prefix or "/"
    return settings.host, f"{prefix}/{ctx.deployment_id}"


def url(ctx: Context) -> str | None:
    """The URL the route exposes; None without routing."""
    if ctx.settings.routing is Routing.NONE:
        return None
    host, path = host_and_path(ctx)
    return f"{ctx.settings.scheme}://{host}{'' if path == '/' else path}"


def route(ctx: Context) -> list[Obj]:
    """The deployment's Ingress or HTTPRoute to its agent-server Service (none without
    routing)."""
    routing = ctx.settings.routing
    if routing is Routing.NONE:
        return []
    spec = _ingress_spec(ctx) if routing is Routing.INGRESS else _http_route_spec(ctx)
    metadata = ctx.metadata(ctx.name(SERVER), SERVER)
    digest = hashlib.sha256(json.dumps(spec, sort_keys=True).encode()).hexdigest()[:16]
    metadata["annotations"] = {ANNOTATION_ROUTE: digest, ANNOTATION_URL: url(ctx) or ""}
    if routing is Routing.INGRESS:
        return [
            {
                "apiVersion": "networking.k8s.io/v1",
                "kind": "Ingress",
                "metadata": metadata,
                "spec": spec,
            }
        ]
    return [
        {"apiVersion": GATEWAY_API_VERSION, "kind": "HTTPRoute", "metadata": metadata, "spec": spec}
    ]


def _ingress_spec(ctx: Context) -> Obj:
    host, path = host_and_path(ctx)
    backend = {"service": {"name": ctx.name(SERVER), "port": {"number": SERVER_PORT}}}
    spec: Obj = {
        "rules": [
            {
                "host": host,
                "http": {"paths": [{"path": path, "pathType": "Prefix", "backend": backend}]},
            }
        ]
    }
    if ctx.settings.ingress_class:
        spec["ingressClassName"] = ctx.settings.ingress_class
    return spec


def parent_ref(ctx: Context) -> Obj:
    settings = ctx.settings
    ref: Obj = {
        "group": "gateway.networking.k8s.io",
        "kind": "Gateway",
        "name": settings.gateway_name,
    }
    if settings.gateway_namespace:
        ref["namespace"] = settings.gateway_namespace
    if settings.gateway_section:
        ref["sectionName"] = settings.gateway_section
    return ref


def _http_route_spec(ctx: Context) -> Obj:
    host, path = host_and_path(ctx)
    rule: Obj = {
        "matches": [{"path": {"type": "PathPrefix", "value": path}}],
        "backendRefs": [{"name": ctx.name(SERVER), "port": SERVER_PORT}],
    }
    if path != "/":
        # The agent server serves at its root: the gateway strips the route's prefix.
        rule["filters"] = [
            {
                "type": "URLRewrite",
                "urlRewrite": {"path": {"type": "ReplacePrefixMatch", "replacePrefixMatch": "/"}},
            }
        ]
    return {"parentRefs": [parent_ref(ctx)], "hostnames": [host], "rules": [rule]}
