"""`deployplane deployments|revisions|listeners|repos|providers ...`: the API from a shell.

One module per resource (`deployments`, `revisions`, `listeners`, `lookups` for repos
and providers), the groups and what they share in `common`, file editing in `edit/`.
Each command is thin: parse options, make one or a few client calls through
`connection.call` (which owns error handling and exit codes), print with `output`.
Wherever a deployment or listener is taken, its name works as well as its id
(`resolve`); files go through `edit` (checked locally, only what differs is sent).
"""

from __future__ import annotations

import typer

# Imported for their commands, which register themselves on the groups of `common`.
from deployplane.cli.commands import deployments as deployments_commands
from deployplane.cli.commands import listeners as listeners_commands
from deployplane.cli.commands import lookups as lookups_commands
from deployplane.cli.commands import revisions as revisions_commands
from deployplane.cli.commands.common import deployments, listeners, providers, repos, revisions

__all__ = ["register"]

_COMMAND_MODULES = (deployments_commands, listeners_commands, lookups_commands, revisions_commands)


def register(app: typer.Typer) -> None:
    """Add the API resource command groups to the root app."""
    groups: list[tuple[typer.Typer, str, str]] = [
        (deployments, "deployments", "Create, change, delete and wait for deployments."),
        (revisions, "revisions", "Inspect the revisions of a deployment."),
        (listeners, "listeners", "Manage listeners (compute infrastructure)."),
        (repos, "repos", "List git-host repositories of an integration."),
        (providers, "providers", "Look up OAuth providers."),
    ]
    for group, name, short_help in groups:
        app.add_typer(group, name=name, short_help=short_help)
