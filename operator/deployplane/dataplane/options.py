"""The listener agent's settings, each an option of `deployplane listener run`.

Every `DEPLOYPLANE_*` variable the agent reads (the chart's `listenerAgent` values set
them) is also an option, `--<name>` for `DEPLOYPLANE_<NAME>`, so that `--help`
documents them (`deployplane.cli.programs.agent` declares them from `SETTINGS`); the
variable still works (an option given wins). The values are checked by the readers
the agent starts with (`serving.config.ServingConfig.from_env`,
`render.settings.from_env`, over the mapping `environment` builds), and a bad one is
refused in one line naming the option and its variable (`naming_options`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final


def variable(name: str) -> str:
    return f"DEPLOYPLANE_{name.upper()}"


def option(name: str) -> str:
    return f"--{name.replace('_', '-')}"


@dataclass(frozen=True)
class Setting:
    """A setting of the agent: option `--<name>`, variable `DEPLOYPLANE_<NAME>`."""

    name: str
    metavar: str
    help: str


SETTINGS: Final = (
    # the control plane
    Setting("control_plane_url", "URL", "The control plane's base URL."),
    Setting(
        "api_key",
        "KEY",
        "API key, sent as X-Api-Key. Prefer the variable: a flag shows in the process list.",
    ),
    Setting("tenant_id", "UUID", "Tenant id, sent as X-Tenant-Id."),
    Setting("poll_interval", "SECONDS", "Seconds between rounds. Default: 2."),
    Setting("resync_interval", "SECONDS", "Seconds between full rounds. Default: 600."),
    # what the agent renders (every deployment of the listener)
    Setting("postgres_image", "IMAGE", "PostgreSQL's image. Default: pgvector/pgvector:pg16."),
    Setting("redis_image", "IMAGE", "Redis's image. Default: redis:7.4-alpine."),
    Setting(
        "autoscaler",
        "hpa|keda",
        "The queue's autoscaler: hpa (CPU) or keda (a ScaledObject on pending + running "
        "runs; the server keeps its CPU HPA). Default: hpa.",
    ),
    Setting(
        "keda_runs_per_worker",
        "N",
        "With keda: one queue worker per N pending or running runs. Default: 10.",
    ),
    Setting(
        "keda_namespace",
        "NAMESPACE",
        "KEDA's namespace, let in to PostgreSQL by the NetworkPolicy. Default: keda.",
    ),
    Setting(
        "routing",
        "none|ingress|gateway",
        "A route per deployment: none, an Ingress, or an HTTPRoute. Default: none.",
    ),
    Setting(
        "route_host",
        "HOST",
        "The routes' host (required with routing); with {id} in it, one host per deployment.",
    ),
    Setting(
        "route_base_path",
        "PATH",
        "Path /<base>/<deployment id> on a shared host, /<base> on a host per deployment.",
    ),
    Setting("route_scheme", "http|https", "The scheme of the URL reported. Default: https."),
    Setting("ingress_class", "CLASS", "The Ingresses' ingressClassName."),
    Setting(
        "gateway",
        "NAMESPACE/NAME",
        "The HTTPRoutes' parent Gateway, namespace/name (or name: the deployment's "
        "namespace); required with gateway routing.",
    ),
    Setting("gateway_section", "SECTION", "The parentRef's sectionName."),
    Setting(
        "routing_namespace",
        "NAMESPACE",
        "Where the ingress controller or gateway runs: the namespace the NetworkPolicy "
        "lets in. Default: the Gateway's.",
    ),
    Setting("network_policy", "true|false", "A NetworkPolicy per deployment. Default: true."),
    Setting(
        "pod_security",
        "restricted|baseline",
        "The Pod Security standard the user's containers are rendered to: restricted "
        "(non-root, no capabilities) or baseline (an image that runs as root). Default: "
        "restricted.",
    ),
)
"""Every setting, in the order `--help` shows them."""


def environment(values: Mapping[str, Any]) -> dict[str, str]:
    """The settings given (by option or variable: click reads both) as the variables
    the configuration readers take; the ones not given are left out (their defaults)."""
    names = [setting.name for setting in SETTINGS]
    return {variable(name): values[name] for name in names if values.get(name) is not None}


_OPTIONS: Final = {variable(s.name): option(s.name) for s in SETTINGS}
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
