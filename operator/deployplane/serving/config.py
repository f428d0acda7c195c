"""Settings every long-running program reads from `DEPLOYPLANE_*` variables: the
readers of numbers and durations, and a probe's endpoint. One line naming the
variable when a value cannot be used (`ConfigError`).
"""

from __future__ import annotations

import math
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass

ENV_READINESS = "DEPLOYPLANE_READINESS_ENDPOINT"
"""The readiness endpoint (`deployplane operator run --readiness` sets it)."""


class ConfigError(ValueError):
    """An environment variable has a value the operator cannot use."""


def _number(
    env: Mapping[str, str], name: str, default: float, what: str = "a number of seconds"
) -> float:
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


def _count(env: Mapping[str, str], name: str, default: int) -> int:
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
    def parse(cls, url: str, name: str = ENV_READINESS) -> Endpoint:
        parts = urllib.parse.urlsplit(url)
        try:
            port = parts.port
        except ValueError:
            port = None
        if parts.scheme != "http" or not parts.hostname or not port:
            raise ConfigError(f"{name} must be http://HOST:PORT/PATH, got {url!r}")
        return cls(parts.hostname, port, parts.path or "/")
