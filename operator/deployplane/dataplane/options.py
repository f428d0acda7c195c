"""The listener agent's settings as options of `deployplane listener run`.

Every `DEPLOYPLANE_*` variable the agent reads (the chart's `listenerAgent` values set
them) is also an option, `--<name>` for `DEPLOYPLANE_<NAME>`, so that `--help`
documents them; the variable still works (an option given wins). The values are
checked where they always were (`OperatorConfig.from_env`, `render.settings.from_env`,
over the mapping `environment` builds), and a bad one is refused in one line naming
the option and its variable (`naming_options`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Annotated, Any, Final

import typer

CONNECTION: Final = "Control plane"
RENDERING: Final = "What the agent renders (every deployment of the listener)"


def variable(name: str) -> str:
    return f"DEPLOYPLANE_{name.upper()}"


def option(name: str) -> str:
    return f"--{name.replace('_', '-')}"


def _setting(name: str, metavar: str, help_: str, panel: str = RENDERING) -> Any:
    return typer.Option(
        option(name),
        envvar=variable(name),
        metavar=metavar,
        help=help_,
        show_default=False,
        rich_help_panel=panel,
    )


ControlPlaneUrl = Annotated[
    str | None, _setting("control_plane_url", "URL", "The control plane's base URL.", CONNECTION)
]
ApiKey = Annotated[
    str | None,
    _setting(
        "api_key",
        "KEY",
        "API key, sent as X-Api-Key. Prefer the variable: a flag shows in the process list.",
        CONNECTION,
    ),
]
TenantId = Annotated[
    str | None, _setting("tenant_id", "UUID", "Tenant id, sent as X-Tenant-Id.", CONNECTION)
]
PollInterval = Annotated[
    str | None,
    _setting("poll_interval", "SECONDS", "Seconds between rounds. Default: 2.", CONNECTION),
]
ResyncInterval = Annotated[
    str | None,
    _setting(
        "resync_interval", "SECONDS", "Seconds between full rounds. Default: 600.", CONNECTION
    ),
]
PostgresImage = Annotated[
    str | None,
    _setting("postgres_image", "IMAGE", "PostgreSQL's image. Default: pgvector/pgvector:pg16."),
]
RedisImage = Annotated[
    str | None,
    _setting("redis_image", "IMAGE", "Redis's image. Default: redis:7.4-alpine."),
]
Autoscaler = Annotated[
    str | None,
    _setting(
        "autoscaler",
        "hpa|keda",
        "The queue's autoscaler: hpa (CPU) or keda (a ScaledObject on pending + running "
        "runs; the server keeps its CPU HPA). Default: hpa.",
    ),
]
KedaRunsPerWorker = Annotated[
    str | None,
    _setting(
        "keda_runs_per_worker",
        "N",
        "With keda: one queue worker per N pending or running runs. Default: 10.",
    ),
]
KedaNamespace = Annotated[
    str | None,
    _setting(
        "keda_namespace",
        "NAMESPACE",
        "KEDA's namespace, let in to PostgreSQL by the NetworkPolicy. Default: keda.",
    ),
]
Routing = Annotated[
    str | None,
    _setting(
        "routing",
        "none|ingress|gateway",
        "A route per deployment: none, an Ingress, or an HTTPRoute. Default: none.",
    ),
]
RouteHost = Annotated[
    str | None,
    _setting(
        "route_host",
        "HOST",
        "The routes' host (required with routing); with {id} in it, one host per deployment.",
    ),
]
RouteBasePath = Annotated[
    str | None,
    _setting(
        "route_base_path",
        "PATH",
        "Path /<base>/<deployment id> on a shared host, /<base> on a host per deployment.",
    ),
]
RouteScheme = Annotated[
    str | None,
    _setting("route_scheme", "http|https", "The scheme of the URL reported. Default: https."),
]
IngressClass = Annotated[
    str | None, _setting("ingress_class", "CLASS", "The Ingresses' ingressClassName.")
]
Gateway = Annotated[
    str | None,
    _setting(
        "gateway",
        "NAMESPACE/NAME",
        "The HTTPRoutes' parent Gateway, namespace/name (or name: the deployment's "
        "namespace); required with gateway routing.",
    ),
]
GatewaySection = Annotated[
    str | None, _setting("gateway_section", "SECTION", "The parentRef's sectionName.")
]
RoutingNamespace = Annotated[
    str | None,
    _setting(
        "routing_namespace",
        "NAMESPACE",
        "Where the ingress controller or gateway runs: the namespace the NetworkPolicy "
        "lets in. Default: the Gateway's.",
    ),
]
NetworkPolicy = Annotated[
    str | None,
    _setting("network_policy", "true|false", "A NetworkPolicy per deployment. Default: true."),
]
PodSecurity = Annotated[
    str | None,
    _setting(
        "pod_security",
        "restricted|baseline",
        "The Pod Security standard the user's containers are rendered to: restricted "
        "(non-root, no capabilities) or baseline (an image that runs as root). Default: "
        "restricted.",
    ),
]

Liveness = Annotated[
    str | None,
    typer.Option(
        "--liveness",
        metavar="URL",
        help="Serve liveness (is the agent stuck?) here, e.g. http://0.0.0.0:8080/healthz.",
    ),
]
Readiness = Annotated[
    str | None,
    typer.Option(
        "--readiness",
        metavar="URL",
        help="Serve readiness (can it work now: running, Kubernetes API and control plane "
        "answer) here, e.g. http://0.0.0.0:8081/readyz.",
    ),
]
"""The probes' endpoints (`deployplane.dataplane.probes`): options only, as the operator's
`--liveness`; not settings of the agent's work."""

SETTINGS: Final = (
    "control_plane_url",
    "api_key",
    "tenant_id",
    "poll_interval",
    "resync_interval",
    "postgres_image",
    "redis_image",
    "autoscaler",
    "keda_runs_per_worker",
    "keda_namespace",
    "routing",
    "route_host",
    "route_base_path",
    "route_scheme",
    "ingress_class",
    "gateway",
    "gateway_section",
    "routing_namespace",
    "network_policy",
    "pod_security",
)
"""The parameter of each setting: option `--<name>`, variable `DEPLOYPLANE_<NAME>`."""


def environment(values: Mapping[str, Any]) -> dict[str, str]:
    """The settings given (by option or variable: click reads both) as the variables
    the configuration readers take; the ones not given are left out (their defaults)."""
    return {variable(name): values[name] for name in SETTINGS if values.get(name) is not None}


_OPTIONS: Final = {variable(name): option(name) for name in SETTINGS}
_NAMED = re.compile(r"\((DEPLOYPLANE_[A-Z_]+)\)|(DEPLOYPLANE_[A-Z_]+)(=?)")


def naming_options(message: str) -> str:
    """A configuration error naming a variable, naming its option too:
    `DEPLOYPLANE_ROUTING='istio': ...` -> `--routing (DEPLOYPLANE_ROUTING): 'istio': ...`."""

    def named(match: re.Match[str]) -> str:
        env = match.group(1) or match.group(2)
        if env not in _OPTIONS:
            return match.group(0)
        if match.group(1):
            return f"({_OPTIONS[env]}, {env})"
        return f"{_OPTIONS[env]} ({env})" + (": " if match.group(3) else "")

    return _NAMED.sub(named, message)
