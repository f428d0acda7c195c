"""Operator configuration from `DEPLOYPLANE_*` environment variables (the chart sets them):
what the listener agent reads too (`deployplane.serving.config.ServingConfig`), and the
operator's own."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from deployplane.serving.config import (
    ConfigError,
    Endpoint,
    ServingConfig,
    positive_number,
    whole_number,
)

__all__ = ["ENV_READINESS", "ConfigError", "Endpoint", "OperatorConfig"]

ENV_READINESS: Final = "DEPLOYPLANE_READINESS_ENDPOINT"
"""The readiness endpoint (`deployplane operator run --readiness` sets it)."""


@dataclass(frozen=True)
class OperatorConfig(ServingConfig):
    namespaces: tuple[str, ...] = ()
    poll_max_interval: float = 30.0
    event_qps: float = 10.0
    """Events posted per second once `event_burst` are spent (`EventRecorder`)."""
    event_burst: int = 50
    metrics_port: int | None = None
    metrics_addr: str = "0.0.0.0"  # the pod network; tests set 127.0.0.1
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
        readiness = env.get(ENV_READINESS)
        return cls(
            **ServingConfig.read_env(env),
            namespaces=namespaces,
            poll_max_interval=positive_number(env, "DEPLOYPLANE_POLL_MAX_INTERVAL", 30.0),
            event_qps=positive_number(
                env, "DEPLOYPLANE_EVENT_QPS", 10.0, "a number of Events a second"
            ),
            event_burst=whole_number(env, "DEPLOYPLANE_EVENT_BURST", 50),
            metrics_port=int(port) if port else None,
            metrics_addr=env.get("DEPLOYPLANE_METRICS_ADDR") or "0.0.0.0",
            readiness=Endpoint.parse(readiness, ENV_READINESS) if readiness else None,
            shutdown_timeout=positive_number(env, "DEPLOYPLANE_SHUTDOWN_TIMEOUT", 30.0),
        )
