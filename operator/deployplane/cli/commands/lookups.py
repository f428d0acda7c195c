"""`deployplane repos list` and `deployplane providers get`: the read-only lookups, two
command groups. Each command imports what it runs."""

from __future__ import annotations

from deployplane.cli.commands.options import (
    Output,
    command,
    group,
    headers_option,
    output_option,
)
from deployplane.cli.params import argument

__all__ = ["providers", "repos"]

repos = group(
    "repos",
    "List git-host repositories of an integration.\n\nThe repositories a git-host "
    "integration makes available to deploy from.",
)
providers = group("providers", "Look up OAuth providers.")


@command(repos, "list")
@argument("integration_id", help="Git-host integration id.")
@output_option()
@headers_option
def list_repositories(integration_id: str, output: Output, no_headers: bool) -> None:
    """List the repositories an integration can deploy from."""
    from deployplane.api import models
    from deployplane.cli.commands.connection import call
    from deployplane.cli.commands.output import print_many

    found = call(lambda c: c.list_repositories(integration_id))
    print_many(found, models.GitRepository, output, headers=not no_headers)


@command(providers, "get")
@argument("provider_id", help="OAuth provider id.")
@output_option()
def get_provider(provider_id: str, output: Output) -> None:
    """Show one OAuth provider."""
    from deployplane.cli.commands.connection import call
    from deployplane.cli.commands.output import print_one

    print_one(call(lambda c: c.get_oauth_provider(provider_id)), output)
