"""`deployplane repos list` and `deployplane providers get`: read-only lookups."""

from __future__ import annotations

from typing import Annotated

import typer

from deployplane.api import models
from deployplane.cli.commands.common import command, providers, repos
from deployplane.cli.commands.connection import call
from deployplane.cli.commands.output import HeadersOption, Output, OutputOption, print_many, print_one

__all__ = ["get_provider", "list_repositories"]


@command(repos, "list")
def list_repositories(
    integration_id: Annotated[str, typer.Argument(help="Git-host integration id.")],
    output: OutputOption = Output.table,
    no_headers: HeadersOption = False,
) -> None:
    """List the repositories an integration can deploy from."""
    found = call(lambda c: c.list_repositories(integration_id))
    print_many(found, models.GitRepository, output, headers=not no_headers)


@command(providers, "get")
def get_provider(
    provider_id: Annotated[str, typer.Argument(help="OAuth provider id.")],
    output: OutputOption = Output.table,
) -> None:
    """Show one OAuth provider."""
    print_one(call(lambda c: c.get_oauth_provider(provider_id)), output)
