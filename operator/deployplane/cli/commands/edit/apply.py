"""`deployplane apply -f FILE`: make the service hold what the file says, like
`kubectl apply`.

Each document of the file (YAML documents separated by `---`) is a deployment or a
listener (one naming `compute_id`), found by its name: absent, it is created; present,
only the fields that differ are PATCHed, and when none does no request is made at all
(`planning`). Read-only and server-set fields (the output of `get -o yaml`) are ignored.
Every document is checked before the first request.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from deployplane.cli.commands.connection import EXIT_CODES_HELP, ConnectedCommand
from deployplane.cli.commands.options import Output, file_option, output_option, timeout_option
from deployplane.cli.params import option

if TYPE_CHECKING:
    from deployplane.api.client import ControlPlaneClient
    from deployplane.cli.commands.edit import editing

__all__ = ["apply"]


@click.command("apply", cls=ConnectedCommand, epilog=EXIT_CODES_HELP)
@file_option
@output_option(
    help="Default: one `kind/name created|configured|unchanged` line each; json or yaml "
    "(the control plane's own fields, nulls left out) or name print the resources."
)
@option("--wait", is_flag=True, help="Follow each deployment's new revision, if it made one.")
@timeout_option
def apply(file: str, output: Output, wait: bool, timeout: float | None) -> None:
    """Create or update the resources of a file by their names.

    Deployments by name, listeners by compute_id; nothing is sent for a resource that
    already matches."""
    from deployplane.api.models import Deployment
    from deployplane.cli.commands.common import follow_new_revision, latest_revision
    from deployplane.cli.commands.connection import ExitCode, UsageError, call, fail
    from deployplane.cli.commands.edit import editing
    from deployplane.cli.commands.edit.bodies import read_documents
    from deployplane.cli.commands.output import print_one, resource_name

    name = "stdin" if file == "-" else file
    try:
        plans = []
        for document in read_documents(file):
            kind = editing.kind_of(document)
            plans.append((kind, editing.desired_of(kind, document, name)))
    except UsageError as exc:
        fail(str(exc), ExitCode.USAGE)

    async def action(client: ControlPlaneClient) -> list[editing.Applied]:
        return [await editing.apply(client, kind, desired) for kind, desired in plans]

    for applied in call(action):
        resource = applied.resource
        if output in (Output.table, Output.wide):
            click.echo(f"{resource_name(resource)} {applied.outcome.value}")
        if wait and isinstance(resource, Deployment):
            previous = latest_revision(applied.previous)
            follow_new_revision(resource, previous, output, timeout=timeout)
        elif output not in (Output.table, Output.wide):
            print_one(resource, output)
