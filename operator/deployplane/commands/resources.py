"""Placeholder until the foundation work lands: registers the API command groups."""

import typer


def register(app: typer.Typer) -> None:
    """Add the API resource command groups to the root app."""
