"""What one invocation says about its connection, importable at no cost: the options as
given, the variable naming a context, where the config file is, and the one error of
configuration. Every command's options and shell completion use these before (or
without) reading the config file itself (`contexts`)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Final

__all__ = ["ENV_CONTEXT", "ConfigError", "ConnectionOptions", "config_path"]

ENV_CONTEXT: Final = "DEPLOYPLANE_CONTEXT"


class ConfigError(Exception):
    """The config file, a context or a key source cannot be used: one line for the user."""


@dataclass(repr=False)
class ConnectionOptions:
    """The connection options of one invocation, as given (any may be missing)."""

    url: str | None = None
    api_key: str | None = None
    tenant_id: str | None = None
    context: str | None = None

    def __repr__(self) -> str:  # never show the key
        return f"ConnectionOptions(url={self.url!r}, tenant_id={self.tenant_id!r})"


def config_path() -> Path:
    """`$XDG_CONFIG_HOME/deployplane/config.yaml` (default `~/.config/...`)."""
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "deployplane" / "config.yaml"
