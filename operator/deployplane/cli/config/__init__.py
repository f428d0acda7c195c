"""The CLI's configuration library: named contexts, the config file, and how a
connection is resolved from flags, environment and context (client-go's `clientcmd`).

It imports nothing from `deployplane.cli.commands`: the `config` subcommands
(`commands/config.py`) and the connection plumbing of every API command
(`commands/connection.py`) sit on top of it. Every failure is a `ConfigError` whose text
is one line for the user, naming the file, context or source, never a key.
"""

from deployplane.cli.config.contexts import (
    ENV_CONTEXT,
    CliConfig,
    ConfigError,
    Context,
    api_key_of,
    config_path,
    load_config,
    save_config,
    selected_context,
)
from deployplane.cli.config.resolve import ConnectionOptions, resolve_connection, url_given

__all__ = [
    "ENV_CONTEXT",
    "CliConfig",
    "ConfigError",
    "ConnectionOptions",
    "Context",
    "api_key_of",
    "config_path",
    "load_config",
    "resolve_connection",
    "save_config",
    "selected_context",
    "url_given",
]
