"""`deployplane repos list` and `deployplane providers get`: the read-only lookups, two
command groups. Each body imports what it runs."""

from __future__ import annotations

from typing import Annotated

import typer

from deployplane.cli.commands.options import (
    HeadersOption,
    Output,
    OutputOption,
    command,
    group,
)

__all__ = ["providers", "repos"]

repos = group("Git-host repositories available through an integration.")
providers = group("OAuth providers.")


@command(repos, "list")
def list_repositories(
    integration_id: Annotated[str, typer.Argument(help="Git-host integration id.")],
    output: OutputOption = Output.table,
    no_headers: HeadersOption = False,
) -> None:
    """List the repositories an integration can deploy from."""
    from deployplane.api import models
    from deployplane.cli.commands.connection import call
    from deployplane.cli.commands.output import print_many

    found = call(lambda c: c.list_repositories(integration_id))
    print_many(found, models.GitRepository, output, headers=not no_headers)


@command(providers, "get")
def get_provider(
    provider_id: Annotated[str, typer.Argument(help="OAuth provider id.")],
    output: OutputOption = Output.table,
) -> None:
    """Show one OAuth provider."""
    from deployplane.cli.commands.connection import call
    from deployplane.cli.commands.output import print_one

    print_one(call(lambda c: c.get_oauth_provider(provider_id)), output)
