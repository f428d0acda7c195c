"""`get REF`, `create -f FILE`, `update REF -f FILE` of one kind (deployments and
listeners alike), over `editing`; deployments also take `--wait` on create and update.

The commands are defined from the kind's name alone; `editing` (the models, the file
checks) is imported when one of them runs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal

import click

from deployplane.cli.commands.options import (
    Output,
    command,
    file_option,
    output_option,
    timeout_option,
    wait_option,
)
from deployplane.cli.params import Completer, argument

if TYPE_CHECKING:
    from deployplane.api.client import ControlPlaneClient
    from deployplane.cli.commands.edit import editing

__all__ = ["add_editing"]

KindName = Literal["deployment", "listener"]


def _kind(name: KindName) -> editing.Kind[Any]:
    from deployplane.cli.commands.edit import editing

    return editing.DEPLOYMENT if name == "deployment" else editing.LISTENER


def add_editing(group: click.Group, noun: KindName, ref_help: str, names: Completer) -> None:
    """`get REF`, `create -f FILE`, `update REF -f FILE` for one kind; deployments also
    take --wait on create and update. `names`: what TAB offers for REF."""
    ref_argument = argument("ref", metavar=noun.upper(), help=ref_help, shell_complete=names)

    @command(group, "get", help=f"Show one {noun}.")
    @ref_argument
    @output_option()
    def get(ref: str, output: Output) -> None:
        from deployplane.cli.commands.connection import call
        from deployplane.cli.commands.output import print_one

        kind = _kind(noun)

        async def action(client: ControlPlaneClient) -> Any:
            return await kind.get(client, await kind.resolve(client, ref))

        print_one(call(action), output)

    _add_create(group, noun)
    _add_update(group, noun, ref_argument)


def _add_create(group: click.Group, noun: KindName) -> None:
    @command(
        group,
        "create",
        help=f"Create a {noun} from a file.\n\nThe API's create body; the output of "
        "`get -o yaml` works (its read-only fields are ignored).",
    )
    @file_option
    @output_option()
    @wait_option
    @timeout_option
    def create(file: str, output: Output, wait: bool, timeout: float | None) -> None:
        from deployplane.cli.commands.common import follow_new_revision
        from deployplane.cli.commands.connection import call
        from deployplane.cli.commands.edit import editing
        from deployplane.cli.commands.output import print_one

        kind = _kind(noun)
        (desired,) = _one_document(kind, file)
        created = call(lambda c: editing.create(c, kind, desired))
        if kind is editing.DEPLOYMENT and wait:
            follow_new_revision(created, None, output, timeout=timeout)
        else:
            print_one(created, output)


def _add_update(
    group: click.Group, noun: KindName, ref_argument: Callable[[Callable[..., Any]], Any]
) -> None:
    """`ref_argument`: the REF argument's decorator."""

    @command(
        group,
        "update",
        help=f"Change a {noun} to the file (PATCH).\n\nOnly the fields in the file that "
        "differ from it are sent, and nothing when none does, so the output of `get -o "
        "yaml` is a valid file. A new repo_ref, graph_config_path or image_uri of a "
        "deployment makes a new revision.",
    )
    @file_option
    @ref_argument
    @output_option()
    @wait_option
    @timeout_option
    def update(file: str, ref: str, output: Output, wait: bool, timeout: float | None) -> None:
        from deployplane.cli.commands.common import follow_new_revision, latest_revision
        from deployplane.cli.commands.connection import call
        from deployplane.cli.commands.edit import editing
        from deployplane.cli.commands.output import print_one, resource_name

        kind = _kind(noun)
        (desired,) = _one_document(kind, file)

        async def action(client: ControlPlaneClient) -> editing.Applied:
            return await editing.update(client, kind, await kind.resolve(client, ref), desired)

        applied = call(action)
        resource = applied.resource
        if applied.outcome is editing.Outcome.unchanged:
            click.echo(f"{resource_name(resource)} unchanged: nothing differs", err=True)
        if kind is editing.DEPLOYMENT and wait and applied.outcome is editing.Outcome.configured:
            previous = latest_revision(applied.previous)
            follow_new_revision(resource, previous, output, timeout=timeout)
        else:
            print_one(resource, output)


def _one_document(kind: editing.Kind[Any], file: str) -> list[Any]:
    from deployplane.cli.commands.connection import ExitCode, fail

    documents = _read(kind, file)
    if len(documents) != 1:
        fail(f"{file} holds {len(documents)} documents; use apply -f for several", ExitCode.USAGE)
    return documents


def _read(kind: editing.Kind[Any], file: str) -> list[Any]:
    from deployplane.cli.commands.connection import ExitCode, UsageError, fail
    from deployplane.cli.commands.edit import editing

    try:
        return editing.read_desired(kind, file)
    except UsageError as exc:
        fail(str(exc), ExitCode.USAGE)
