"""Operator configuration from `DEPLOYPLANE_*` environment variables (the chart sets them)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field

from deployplane.externals.connections import Connection
from deployplane.serving.config import ENV_READINESS, ConfigError, Endpoint, _count, _number


@dataclass(frozen=True)
class OperatorConfig:
    control_plane_url: str | None = None
    api_key: str | None = field(default=None, repr=False)
    tenant_id: str | None = None
    namespaces: tuple[str, ...] = ()
    poll_interval: float = 2.0
    poll_max_interval: float = 30.0
    resync_interval: float = 600.0
    event_qps: float = 10.0
    """Events posted per second once `event_burst` are spent (`EventRecorder`)."""
    event_burst: int = 50
    metrics_port: int | None = None
    metrics_addr: str = "0.0.0.0"  # the pod network; tests set 127.0.0.1
    unhealthy_after: float = 60.0
    """Readiness fails once the API or a watch has failed for longer than this."""
    readiness: Endpoint | None = None
    """Where readiness is served (`deployplane.controller.probes`); None: nowhere."""
    shutdown_timeout: float = 30.0
    """On shutdown, passes under way get this long to finish before they are cancelled."""

    def scope(self) -> str:
        """The namespaces it watches, in words, for its start-up log line."""
        if not self.namespaces:
            return "every namespace (cluster-wide)"
        return "namespaces " + ", ".join(self.namespaces) + " only"

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> OperatorConfig:
        env = os.environ if env is None else env
        namespaces = tuple(
            ns.strip() for ns in env.get("DEPLOYPLANE_NAMESPACES", "").split(",") if ns.strip()
        )
        port = env.get("DEPLOYPLANE_METRICS_PORT")
        if port and not (port.isascii() and port.isdigit() and int(port) < 65536):
            raise ConfigError(f"DEPLOYPLANE_METRICS_PORT must be a port number, got {port!r}")
        return cls(
            control_plane_url=env.get("DEPLOYPLANE_CONTROL_PLANE_URL") or None,
            api_key=env.get("DEPLOYPLANE_API_KEY") or None,
            tenant_id=env.get("DEPLOYPLANE_TENANT_ID") or None,
            namespaces=namespaces,
            poll_interval=_number(env, "DEPLOYPLANE_POLL_INTERVAL", 2.0),
            poll_max_interval=_number(env, "DEPLOYPLANE_POLL_MAX_INTERVAL", 30.0),
            resync_interval=_number(env, "DEPLOYPLANE_RESYNC_INTERVAL", 600.0),
            event_qps=_number(env, "DEPLOYPLANE_EVENT_QPS", 10.0, "a number of Events a second"),
            event_burst=_count(env, "DEPLOYPLANE_EVENT_BURST", 50),
            metrics_port=int(port) if port else None,
            metrics_addr=env.get("DEPLOYPLANE_METRICS_ADDR") or "0.0.0.0",
            unhealthy_after=_number(env, "DEPLOYPLANE_UNHEALTHY_AFTER", 60.0),
            readiness=Endpoint.parse(env[ENV_READINESS]) if env.get(ENV_READINESS) else None,
            shutdown_timeout=_number(env, "DEPLOYPLANE_SHUTDOWN_TIMEOUT", 30.0),
        )

    def default_connection(self) -> Connection | None:
        if not self.control_plane_url:
            return None
        return Connection(self.control_plane_url, self.api_key, self.tenant_id)
