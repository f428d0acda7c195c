"""What the operator and the listener agent both read from `DEPLOYPLANE_*` variables: the
control plane of their own connection, how often they look, how long readiness bears
a failing Kubernetes API (`ServingConfig`); the readers of numbers; a probe's endpoint.
A value a program cannot use is one line naming its variable (`ConfigError`).
"""

from __future__ import annotations

import math
import os
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Self

from deployplane.api.connection import ConnectionSettings

__all__ = ["ConfigError", "Endpoint", "ServingConfig", "positive_number", "whole_number"]


class ConfigError(ValueError):
    """A setting (an environment variable, an option) has a value the program cannot use."""


def positive_number(
    env: Mapping[str, str], name: str, default: float, what: str = "a number of seconds"
) -> float:
    """The variable `name` of `env` as a finite number above 0; `default` when unset."""
    raw = env.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = float(raw)
    except ValueError:
        raise ConfigError(f"{name} must be {what}, got {raw!r}") from None
    if not math.isfinite(value):  # float() accepts "nan" and "inf"; no timer can use them
        raise ConfigError(f"{name} must be {what}, got {raw!r}")
    if value <= 0:
        raise ConfigError(f"{name} must be positive, got {raw!r}")
    return value


def whole_number(env: Mapping[str, str], name: str, default: int) -> int:
    """The variable `name` of `env` as a whole number above 0; `default` when unset."""
    raw = env.get(name)
    if raw is None or raw == "":
        return default
    if not (raw.isascii() and raw.isdigit() and int(raw) > 0):
        raise ConfigError(f"{name} must be a whole number above 0, got {raw!r}")
    return int(raw)


@dataclass(frozen=True)
class Endpoint:
    """Where a probe is served: http://HOST:PORT/PATH."""

    host: str
    port: int
    path: str

    @classmethod
    def parse(cls, url: str, name: str) -> Endpoint:
        """`name`: the option or variable it came from, for the error."""
        parts = urllib.parse.urlsplit(url)
        try:
            port = parts.port
        except ValueError:
            port = None
        if parts.scheme != "http" or not parts.hostname or not port:
            raise ConfigError(f"{name} must be http://HOST:PORT/PATH, got {url!r}")
        return cls(parts.hostname, port, parts.path or "/")


@dataclass(frozen=True)
class ServingConfig:
    """The settings the operator and the listener agent share, and read alike."""

    control_plane_url: str | None = None
    api_key: str | None = field(default=None, repr=False)
    tenant_id: str | None = None
    poll_interval: float = 2.0
    resync_interval: float = 600.0
    unhealthy_after: float = 60.0
    """Readiness fails once the Kubernetes API (or a watch) has failed for longer."""

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Self:
        return cls(**cls.read_env(os.environ if env is None else env))

    @staticmethod
    def read_env(env: Mapping[str, str]) -> dict[str, Any]:
        """The shared settings of `env`, by field name (a program adds its own)."""
        return {
            "control_plane_url": env.get("DEPLOYPLANE_CONTROL_PLANE_URL") or None,
            "api_key": env.get("DEPLOYPLANE_API_KEY") or None,
            "tenant_id": env.get("DEPLOYPLANE_TENANT_ID") or None,
            "poll_interval": positive_number(env, "DEPLOYPLANE_POLL_INTERVAL", 2.0),
            "resync_interval": positive_number(env, "DEPLOYPLANE_RESYNC_INTERVAL", 600.0),
            "unhealthy_after": positive_number(env, "DEPLOYPLANE_UNHEALTHY_AFTER", 60.0),
        }

    def default_connection(self) -> ConnectionSettings | None:
        """The program's own control plane; None when no URL is set."""
        if not self.control_plane_url:
            return None
        return ConnectionSettings(self.control_plane_url, self.api_key, self.tenant_id)
