"""The agent's settings that shape what it renders for every deployment of its listener:
the PostgreSQL and Redis images, the queue's autoscaler, routing, the NetworkPolicy,
the Pod Security standard of the user's containers.

One frozen value, passed to `render`: the renderer stays a pure function of its input.
`from_env` reads them from the agent's environment (the chart's `listenerAgent`
values), refusing a bad one with one line (docs/dataplane.md, "Settings").
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import TypeVar

__all__ = [
    "Autoscaler",
    "DataPlaneSettings",
    "PodSecurity",
    "Routing",
    "SettingsError",
    "from_env",
]

DEFAULT_POSTGRES_IMAGE = "pgvector/pgvector:pg16"
DEFAULT_REDIS_IMAGE = "redis:7.4-alpine"
# The vendor's queue runs N_JOBS_PER_WORKER runs at once (10 by default): KEDA adds a
# worker per that many pending or running runs.
DEFAULT_RUNS_PER_WORKER = 10


class Autoscaler(StrEnum):
    HPA = "hpa"
    KEDA = "keda"


class Routing(StrEnum):
    NONE = "none"
    INGRESS = "ingress"
    GATEWAY = "gateway"


class PodSecurity(StrEnum):
    """The Pod Security standard the user's containers (agent server, queue, sidecars,
    init containers) are rendered to (render/security.py): `restricted` runs them as
    non-root with no capabilities; `baseline` lets an image run as root."""

    RESTRICTED = "restricted"
    BASELINE = "baseline"


class SettingsError(ValueError):
    """A setting the agent cannot run with; the message is one line naming it."""


@dataclass(frozen=True)
class DataPlaneSettings:
    """What the agent renders beyond the deployment's own fields.

    `host` is the routes' host: a fixed name (every deployment under
    `/<base_path>/<deployment-id>` on it) or a template with `{id}` (one host per
    deployment, path `/<base_path>`). `routing_namespace` is where the routing layer
    (ingress controller, gateway) runs: the only namespace the NetworkPolicy lets in.
    """

    postgres_image: str = DEFAULT_POSTGRES_IMAGE
    redis_image: str = DEFAULT_REDIS_IMAGE
    autoscaler: Autoscaler = Autoscaler.HPA
    runs_per_worker: int = DEFAULT_RUNS_PER_WORKER
    keda_namespace: str = "keda"
    routing: Routing = Routing.NONE
    base_path: str = ""
    host: str = ""
    scheme: str = "https"
    ingress_class: str = ""
    gateway_name: str = ""
    gateway_namespace: str = ""
    gateway_section: str = ""
    routing_namespace: str = ""
    network_policy: bool = True
    pod_security: PodSecurity = PodSecurity.RESTRICTED

    def __post_init__(self) -> None:
        if self.routing is not Routing.NONE and not self.host:
            raise SettingsError(f"routing {self.routing} needs a host (DEPLOYPLANE_ROUTE_HOST)")
        if self.host and not _HOST.fullmatch(self.host.replace("{id}", "x")):
            raise SettingsError(
                f"DEPLOYPLANE_ROUTE_HOST={self.host!r} is not a DNS name (template: {{id}})"
            )
        if self.routing is Routing.GATEWAY and not self.gateway_name:
            raise SettingsError("routing gateway needs the Gateway's name (DEPLOYPLANE_GATEWAY)")
        if not _PATH.fullmatch(self.base_path):
            raise SettingsError(
                f"DEPLOYPLANE_ROUTE_BASE_PATH={self.base_path!r} is not a URL path like /agents"
            )
        if self.runs_per_worker < 1:
            raise SettingsError(
                f"DEPLOYPLANE_KEDA_RUNS_PER_WORKER={self.runs_per_worker}: runs per queue "
                "worker must be at least 1 (KEDA's target > 0)"
            )
        if self.scheme not in ("http", "https"):
            raise SettingsError(f"DEPLOYPLANE_ROUTE_SCHEME={self.scheme!r}: expected http or https")

    @property
    def prefix(self) -> str:
        """The base path without slashes at its ends ("" for the root)."""
        return self.base_path.strip("/")

    @property
    def routing_namespace_or_default(self) -> str:
        if self.routing_namespace:
            return self.routing_namespace
        return self.gateway_namespace if self.routing is Routing.GATEWAY else ""


_HOST = re.compile(r"[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*")
_PATH = re.compile(r"(/?[A-Za-z0-9._~-]+)*/?")

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


E = TypeVar("E", bound=StrEnum)


def _choice(env: Mapping[str, str], name: str, kind: type[E], default: E) -> E:
    raw = env.get(name, "").strip().lower() or default.value
    try:
        return kind(raw)
    except ValueError:
        allowed = " | ".join(member.value for member in kind)
        raise SettingsError(f"{name}={raw!r}: expected {allowed}") from None


def _flag(env: Mapping[str, str], name: str, default: bool) -> bool:
    raw = env.get(name, "").strip().lower()
    if not raw:
        return default
    if raw in _TRUE | _FALSE:
        return raw in _TRUE
    raise SettingsError(f"{name}={raw!r}: expected true or false")


def _int(env: Mapping[str, str], name: str, default: int) -> int:
    raw = env.get(name, "").strip()
    try:
        return int(raw) if raw else default
    except ValueError:
        raise SettingsError(f"{name}={raw!r}: expected a whole number") from None


def from_env(env: Mapping[str, str]) -> DataPlaneSettings:
    """The settings from DEPLOYPLANE_* variables (the chart sets them from its values).

    DEPLOYPLANE_GATEWAY is `namespace/name` (or `name`: the namespace is then the
    deployment's), DEPLOYPLANE_GATEWAY_SECTION its listener's sectionName.
    """
    gateway = env.get("DEPLOYPLANE_GATEWAY", "").strip()
    gateway_namespace, _, gateway_name = gateway.rpartition("/")
    return DataPlaneSettings(
        postgres_image=env.get("DEPLOYPLANE_POSTGRES_IMAGE", "").strip() or DEFAULT_POSTGRES_IMAGE,
        redis_image=env.get("DEPLOYPLANE_REDIS_IMAGE", "").strip() or DEFAULT_REDIS_IMAGE,
        autoscaler=_choice(env, "DEPLOYPLANE_AUTOSCALER", Autoscaler, Autoscaler.HPA),
        runs_per_worker=_int(env, "DEPLOYPLANE_KEDA_RUNS_PER_WORKER", DEFAULT_RUNS_PER_WORKER),
        keda_namespace=env.get("DEPLOYPLANE_KEDA_NAMESPACE", "").strip() or "keda",
        routing=_choice(env, "DEPLOYPLANE_ROUTING", Routing, Routing.NONE),
        base_path=env.get("DEPLOYPLANE_ROUTE_BASE_PATH", "").strip(),
        host=env.get("DEPLOYPLANE_ROUTE_HOST", "").strip().lower(),
        scheme=env.get("DEPLOYPLANE_ROUTE_SCHEME", "").strip() or "https",
        ingress_class=env.get("DEPLOYPLANE_INGRESS_CLASS", "").strip(),
        gateway_name=gateway_name,
        gateway_namespace=gateway_namespace,
        gateway_section=env.get("DEPLOYPLANE_GATEWAY_SECTION", "").strip(),
        routing_namespace=env.get("DEPLOYPLANE_ROUTING_NAMESPACE", "").strip(),
        network_policy=_flag(env, "DEPLOYPLANE_NETWORK_POLICY", True),
        pod_security=_choice(env, "DEPLOYPLANE_POD_SECURITY", PodSecurity, PodSecurity.RESTRICTED),
    )
