"""`get REF`, `create -f FILE`, `update REF -f FILE` of one kind (deployments and
listeners alike), over `editing`; deployments also take `--wait` on create and update.
"""

from __future__ import annotations

from typing import Any

import typer

from deployplane.api.client import ControlPlaneClient
from deployplane.cli.commands.common import (
    TimeoutOption,
    WaitOption,
    command,
    follow_new_revision,
    latest_revision,
)
from deployplane.cli.commands.connection import ExitCode, UsageError, call, fail
from deployplane.cli.commands.edit import editing
from deployplane.cli.commands.edit.bodies import FileOption
from deployplane.cli.commands.output import Output, OutputOption, print_one, resource_name

__all__ = ["add_editing"]


def add_editing(group: typer.Typer, kind: editing.Kind[Any], ref_help: str) -> None:
    """`get REF`, `create -f FILE`, `update REF -f FILE` for one kind; deployments also
    take --wait on create and update."""

    @command(group, "get", help=f"Show one {kind.noun}.")
    def get(
        ref: str = typer.Argument(help=ref_help, metavar=kind.noun.upper()),
        output: OutputOption = Output.table,
    ) -> None:
        async def action(client: ControlPlaneClient) -> Any:
            return await kind.get(client, await kind.resolve(client, ref))

        print_one(call(action), output)

    _add_create(group, kind)
    _add_update(group, kind, ref_help)


def _add_create(group: typer.Typer, kind: editing.Kind[Any]) -> None:
    @command(
        group,
        "create",
        help=f"Create a {kind.noun} from a file (the API's create body; `get -o yaml` "
        "output works: read-only fields are ignored).",
    )
    def create(
        file: FileOption,
        output: OutputOption = Output.table,
        wait: WaitOption = False,
        timeout: TimeoutOption = None,
    ) -> None:
        (desired,) = _one_document(kind, file)
        created = call(lambda c: editing.create(c, kind, desired))
        if kind is editing.DEPLOYMENT and wait:
            follow_new_revision(created, None, output, timeout=timeout)
        else:
            print_one(created, output)


def _add_update(group: typer.Typer, kind: editing.Kind[Any], ref_help: str) -> None:
    @command(
        group,
        "update",
        help=f"Change a {kind.noun} to the file (PATCH): only the fields in the file that "
        "differ from it are sent, and nothing when none does, so the output of `get -o "
        "yaml` is a valid file. A new repo_ref, graph_config_path or image_uri of a "
        "deployment makes a new revision.",
    )
    def update(
        file: FileOption,
        ref: str = typer.Argument(help=ref_help, metavar=kind.noun.upper()),
        output: OutputOption = Output.table,
        wait: WaitOption = False,
        timeout: TimeoutOption = None,
    ) -> None:
        (desired,) = _one_document(kind, file)

        async def action(client: ControlPlaneClient) -> editing.Applied:
            return await editing.update(client, kind, await kind.resolve(client, ref), desired)

        applied = call(action)
        resource = applied.resource
        if applied.outcome is editing.Outcome.unchanged:
            typer.echo(f"{resource_name(resource)} unchanged: nothing differs", err=True)
        if kind is editing.DEPLOYMENT and wait and applied.outcome is editing.Outcome.configured:
            previous = latest_revision(applied.previous)
            follow_new_revision(resource, previous, output, timeout=timeout)
        else:
            print_one(resource, output)


def _one_document(kind: editing.Kind[Any], file: str) -> list[Any]:
    documents = _read(kind, file)
    if len(documents) != 1:
        fail(f"{file} holds {len(documents)} documents; use apply -f for several", ExitCode.USAGE)
    return documents


def _read(kind: editing.Kind[Any], file: str) -> list[Any]:
    try:
        return editing.read_desired(kind, file)
    except UsageError as exc:
        fail(str(exc), ExitCode.USAGE)
