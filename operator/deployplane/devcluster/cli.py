"""Command group; filled in by its own issue."""

import typer

app = typer.Typer(no_args_is_help=True)
