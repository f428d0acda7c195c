"""`deployplane config get-contexts|current-context|use-context|set-context`: the
commands over the configuration library (`deployplane.cli.config`, where the config
file's format is described). Each body imports the config file's models when it runs."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated

import typer

from deployplane.cli.commands.connection import ExitCode, fail
from deployplane.cli.config.options import ConfigError, config_path

__all__ = ["app"]


app = typer.Typer(
    no_args_is_help=True,
    rich_markup_mode=None,
    add_completion=False,
    help=f"Contexts: named connections in {config_path().name} "
    "($XDG_CONFIG_HOME/deployplane/config.yaml).",
)


def _usage(action: Callable[[], None]) -> None:
    """Run a command's body; its `ConfigError` is one line, exit 2."""
    try:
        action()
    except ConfigError as exc:
        fail(str(exc), ExitCode.USAGE)


@app.command("get-contexts")
def get_contexts() -> None:
    """List the contexts; the current one is marked with *."""
    from deployplane.cli.commands.tables import Col, render
    from deployplane.cli.config.contexts import load_config

    def show() -> None:
        config = load_config()
        if not config.contexts:
            typer.echo(f"No contexts in {config_path()}.", err=True)
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
        typer.echo("\n".join(render(columns, rows, None).lines))

    _usage(show)


@app.command("current-context")
def current_context() -> None:
    """Print the current context's name."""
    from deployplane.cli.config.contexts import load_config

    def show() -> None:
        name = load_config().current_context
        if name is None:
            raise ConfigError("no current context (deployplane config use-context NAME)")
        typer.echo(name)

    _usage(show)


@app.command("use-context")
def use_context(name: Annotated[str, typer.Argument(help="Context name.")]) -> None:
    """Make a context the current one."""
    from deployplane.cli.config.contexts import load_config, save_config

    def use() -> None:
        config = load_config()
        if config.find(name) is None:
            raise ConfigError(f"no context named {name!r} in {config_path()}")
        save_config(config.model_copy(update={"current_context": name}))
        typer.echo(f'Switched to context "{name}".')

    _usage(use)


@app.command("set-context")
def set_context(
    name: Annotated[str, typer.Argument(help="Context name (created or changed).")],
    url: Annotated[str | None, typer.Option(help="Base URL of the control plane.")] = None,
    tenant_id: Annotated[str | None, typer.Option(help="Workspace (tenant) id.")] = None,
    api_key_file: Annotated[
        str | None, typer.Option(help="Read the API key from this file.")
    ] = None,
    api_key_command: Annotated[
        str | None, typer.Option(help="Run this command (no shell); its output is the key.")
    ] = None,
    api_key_env: Annotated[
        str | None, typer.Option(help="Read the API key from this environment variable.")
    ] = None,
    use: Annotated[bool, typer.Option("--use", help="Also make it the current context.")] = False,
) -> None:
    """Create or change a context (only the options given change). The key itself is
    never stored: give where to read it."""
    from pydantic import ValidationError

    from deployplane.cli.config.contexts import CliConfig, Context, load_config, save_config

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
        typer.echo(f'Context "{name}" saved in {path}.')

    _usage(change)
