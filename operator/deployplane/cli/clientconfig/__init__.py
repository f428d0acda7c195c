"""The CLI's configuration library: named contexts, the config file, and how a
connection is resolved from flags, environment and context (client-go's `clientcmd`).

- `options`: what an invocation gives (its connection options, `DEPLOYPLANE_CONTEXT`,
  where the config file is) and `ConfigError`; importable at no cost;
- `contexts`: the config file and its contexts (pydantic, YAML);
- `resolve`: flags, then variables, then the context: the connection of a command.

It imports nothing from `deployplane.cli.commands`: the `config` subcommands
(`commands/config.py`) and the connection plumbing of every API command
(`commands/connection.py`) sit on top of it. Every failure is a `ConfigError` whose text
is one line for the user, naming the file, context or source, never a key.
"""
