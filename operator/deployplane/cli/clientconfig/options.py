"""What one invocation says about its connection, importable at no cost: the options as
given, the variable naming a context, where the config file is, and the one error of
configuration. Every command's options and shell completion use these before (or
without) reading the config file itself (`contexts`)."""

from __future__ import annotations

import os

# Not typing's TYPE_CHECKING, nor dataclasses or pathlib: a TAB that asks the control
# plane for names reads the connection through this module, and those imports would cost
# it a fifth of its answer.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Final

__all__ = ["ENV_CONTEXT", "ConfigError", "ConnectionOptions", "config_file", "config_path"]

ENV_CONTEXT: Final = "DEPLOYPLANE_CONTEXT"


class ConfigError(Exception):
    """The config file, a context or a key source cannot be used: one line for the user."""


class ConnectionOptions:
    """The connection options of one invocation, as given (any may be missing)."""

    __slots__ = ("api_key", "context", "tenant_id", "url")

    def __init__(
        self,
        url: str | None = None,
        api_key: str | None = None,
        tenant_id: str | None = None,
        context: str | None = None,
    ) -> None:
        self.url = url
        self.api_key = api_key
        self.tenant_id = tenant_id
        self.context = context

    def __repr__(self) -> str:  # never show the key
        return f"ConnectionOptions(url={self.url!r}, tenant_id={self.tenant_id!r})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ConnectionOptions):
            return NotImplemented
        return (self.url, self.api_key, self.tenant_id, self.context) == (
            other.url,
            other.api_key,
            other.tenant_id,
            other.context,
        )

    __hash__ = None  # type: ignore[assignment]  # mutable, compared by value


def config_file() -> str:
    """`$XDG_CONFIG_HOME/deployplane/config.yaml` (default `~/.config/...`)."""
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return os.path.join(base, "deployplane", "config.yaml")


def config_path() -> Path:
    """`config_file()` as a `Path`."""
    from pathlib import Path

    return Path(config_file())
