"""Named contexts: which control plane, which workspace, where the key comes from.

`$XDG_CONFIG_HOME/deployplane/config.yaml` (default `~/.config/deployplane/config.yaml`):

    current_context: dev
    contexts:
      - name: dev
        url: http://127.0.0.1:8124
        tenant_id: 11111111-1111-4111-8111-111111111111
        api_key_file: ~/.config/deployplane/dev.key    # or
        # api_key_command: pass show deployplane/dev    # or
        # api_key_env: DEV_KEY

A context never holds the key itself, and `set-context` takes no key on its command
line (the command line shows in `ps` and in shell history): the key is read, when a
command needs it, from a file, from a command's output or from an environment variable.
Each value of a connection comes from the first of: its flag, its `DEPLOYPLANE_*`
environment variable, the context (`--context`, `DEPLOYPLANE_CONTEXT`, else
`current_context`).
"""

from __future__ import annotations

import os
import shlex
import subprocess
from pathlib import Path

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from deployplane.cli.clientconfig.options import ConfigError, config_path

__all__ = [
    "CliConfig",
    "Context",
    "api_key_of",
    "load_config",
    "save_config",
    "selected_context",
]


class Context(BaseModel):
    """One named connection; at most one source of the API key."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1)
    url: str | None = None
    tenant_id: str | None = None
    api_key_file: str | None = None
    api_key_command: str | None = None
    api_key_env: str | None = None

    @model_validator(mode="after")
    def _one_key_source(self) -> Context:
        given = [s for s in (self.api_key_file, self.api_key_command, self.api_key_env) if s]
        if len(given) > 1:
            raise ValueError("give one of api_key_file, api_key_command, api_key_env")
        return self

    def key_source(self) -> str:
        if self.api_key_file:
            return f"file {self.api_key_file}"
        if self.api_key_command:
            return "command"
        if self.api_key_env:
            return f"env {self.api_key_env}"
        return "-"


class CliConfig(BaseModel):
    """The config file."""

    model_config = ConfigDict(extra="forbid")

    current_context: str | None = None
    contexts: list[Context] = []

    def find(self, name: str) -> Context | None:
        return next((c for c in self.contexts if c.name == name), None)


def load_config() -> CliConfig:
    """The config file's contents (empty when there is none); `ConfigError` if broken."""
    path = config_path()
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return CliConfig()
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror or exc}") from None
    try:
        return CliConfig.model_validate(yaml.safe_load(text) or {})
    except (yaml.YAMLError, ValidationError) as exc:
        first = str(exc).splitlines()
        reason = " ".join(first[:3]) if first else "invalid"
        raise ConfigError(f"{path} is not a valid deployplane config: {reason}") from None


def save_config(config: CliConfig) -> Path:
    path = config_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    text = yaml.safe_dump(config.model_dump(exclude_none=True), sort_keys=False)
    # Owner-only, like kubeconfig: it says where the keys are.
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(text)
    return path


def api_key_of(context: Context) -> str | None:
    """The context's API key, read from its source now; `ConfigError` naming the source
    (never the key) when it cannot be read."""
    where = f"context {context.name!r}"
    if context.api_key_file:
        path = Path(context.api_key_file).expanduser()
        try:
            return path.read_text(encoding="utf-8").strip() or None
        except OSError as exc:
            raise ConfigError(f"{where}: cannot read api_key_file {path}: {exc.strerror}") from None
    if context.api_key_command:
        try:
            done = subprocess.run(
                shlex.split(context.api_key_command),
                capture_output=True,
                text=True,
                timeout=30,
                check=False,
            )
        except (OSError, ValueError, subprocess.TimeoutExpired) as exc:
            raise ConfigError(f"{where}: api_key_command failed: {exc}") from None
        if done.returncode != 0:
            raise ConfigError(f"{where}: api_key_command exited {done.returncode}")
        return done.stdout.strip() or None
    if context.api_key_env:
        return os.environ.get(context.api_key_env) or None
    return None


def selected_context(name: str | None) -> Context | None:
    """The context named by --context/DEPLOYPLANE_CONTEXT, else the current one."""
    config = load_config()
    chosen = name or config.current_context
    if chosen is None:
        return None
    context = config.find(chosen)
    if context is None:
        raise ConfigError(f"no context named {chosen!r} in {config_path()}")
    return context
