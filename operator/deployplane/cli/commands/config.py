"""`deployplane config get-contexts|current-context|use-context|set-context`: the
commands over the client's configuration (`deployplane.cli.clientconfig`, where the
config file's format is described). Each command imports the config file's models when
it runs."""

from __future__ import annotations

import os
from collections.abc import Callable

import click

from deployplane.cli.clientconfig.options import ConfigError, config_file, config_path
from deployplane.cli.commands.completers import context_names
from deployplane.cli.commands.connection import ExitCode, fail
from deployplane.cli.helptext import Group
from deployplane.cli.params import argument, option

__all__ = ["config"]


config = Group(
    name="config",
    no_args_is_help=True,
    help="Contexts: named connections to a control plane.\n\nThey live in "
    f"{os.path.basename(config_file())} ($XDG_CONFIG_HOME/deployplane/config.yaml).",
)


def _usage(action: Callable[[], None]) -> None:
    """Run a command's body; its `ConfigError` is one line, exit 2."""
    try:
        action()
    except ConfigError as exc:
        fail(str(exc), ExitCode.USAGE)


@config.command("get-contexts")
def get_contexts() -> None:
    """List the contexts; the current one is marked with *."""
    from deployplane.cli.clientconfig.contexts import load_config
    from deployplane.cli.commands.tables import Col, render

    def show() -> None:
        config = load_config()
        if not config.contexts:
            click.echo(f"No contexts in {config_path()}.", err=True)
            return
        columns = [Col("CURRENT"), Col("NAME"), Col("URL"), Col("TENANT"), Col("API KEY FROM")]
        rows = [
            [
                "*" if c.name == config.current_context else "",
                c.name,
                c.url or "-",
                c.tenant_id or "-",
                c.key_source(),
            ]
            for c in config.contexts
        ]
        click.echo("\n".join(render(columns, rows, None).lines))

    _usage(show)


@config.command("current-context")
def current_context() -> None:
    """Print the current context's name."""
    from deployplane.cli.clientconfig.contexts import load_config

    def show() -> None:
        name = load_config().current_context
        if name is None:
            raise ConfigError("no current context (deployplane config use-context NAME)")
        click.echo(name)

    _usage(show)


@config.command("use-context")
@argument("name", help="Context name.", shell_complete=context_names)
def use_context(name: str) -> None:
    """Make a context the current one."""
    from deployplane.cli.clientconfig.contexts import load_config, save_config

    def use() -> None:
        config = load_config()
        if config.find(name) is None:
            raise ConfigError(f"no context named {name!r} in {config_path()}")
        save_config(config.model_copy(update={"current_context": name}))
        click.echo(f'Switched to context "{name}".')

    _usage(use)


@config.command("set-context")
@argument("name", help="Context name (created or changed).", shell_complete=context_names)
@option("--url", help="Base URL of the control plane.")
@option("--tenant-id", help="Workspace (tenant) id.")
@option("--api-key-file", help="Read the API key from this file.")
@option("--api-key-command", help="Run this command (no shell); its output is the key.")
@option("--api-key-env", help="Read the API key from this environment variable.")
@option("--use", is_flag=True, help="Also make it the current context.")
def set_context(
    name: str,
    url: str | None,
    tenant_id: str | None,
    api_key_file: str | None,
    api_key_command: str | None,
    api_key_env: str | None,
    use: bool,
) -> None:
    """Create or change a context (only the options given change).

    The key itself is never stored: give where to read it."""
    from pydantic import ValidationError

    from deployplane.cli.clientconfig.contexts import CliConfig, Context, load_config, save_config

    def change() -> None:
        config = load_config()
        found = config.find(name)
        current = found.model_dump() if found else {"name": name}  # validated below
        updates: dict[str, str | None] = {
            k: v for k, v in {"url": url, "tenant_id": tenant_id}.items() if v is not None
        }
        sources = {
            "api_key_file": api_key_file,
            "api_key_command": api_key_command,
            "api_key_env": api_key_env,
        }
        if any(v is not None for v in sources.values()):
            updates.update(sources)  # a new key source replaces the old one
        try:
            changed = Context.model_validate({**current, **updates})
        except ValidationError as exc:
            raise ConfigError(f"context {name!r}: {exc.errors()[0]['msg']}") from None
        contexts = [changed if c.name == name else c for c in config.contexts]
        if found is None:
            contexts.append(changed)
        current_name = name if use or config.current_context is None else config.current_context
        path = save_config(CliConfig(current_context=current_name, contexts=contexts))
        click.echo(f'Context "{name}" saved in {path}.')

    _usage(change)
