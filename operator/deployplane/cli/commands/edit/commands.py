"""`get REF`, `create -f FILE`, `update REF -f FILE` of one kind (deployments and
listeners alike), over `editing`; deployments also take `--wait` on create and update.

The commands are defined from the kind's name alone; `editing` (the models, the file
checks) is imported when one of them runs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal

import typer

from deployplane.cli.commands.options import (
    FileOption,
    Output,
    OutputOption,
    TimeoutOption,
    WaitOption,
    command,
)

if TYPE_CHECKING:
    from deployplane.api.client import ControlPlaneClient
    from deployplane.cli.commands.edit import editing

__all__ = ["add_editing"]

KindName = Literal["deployment", "listener"]


def _kind(name: KindName) -> editing.Kind[Any]:
    from deployplane.cli.commands.edit import editing

    return editing.DEPLOYMENT if name == "deployment" else editing.LISTENER


Completer = Callable[[typer.Context, str], list[str]]


def add_editing(group: typer.Typer, noun: KindName, ref_help: str, names: Completer) -> None:
    """`get REF`, `create -f FILE`, `update REF -f FILE` for one kind; deployments also
    take --wait on create and update. `names`: what TAB offers for REF."""

    def ref_argument() -> Any:
        return typer.Argument(help=ref_help, metavar=noun.upper(), autocompletion=names)

    @command(group, "get", help=f"Show one {noun}.")
    def get(ref: str = ref_argument(), output: OutputOption = Output.table) -> None:
        from deployplane.cli.commands.connection import call
        from deployplane.cli.commands.output import print_one

        kind = _kind(noun)

        async def action(client: ControlPlaneClient) -> Any:
            return await kind.get(client, await kind.resolve(client, ref))

        print_one(call(action), output)

    _add_create(group, noun)
    _add_update(group, noun, ref_argument())


def _add_create(group: typer.Typer, noun: KindName) -> None:
    @command(
        group,
        "create",
        help=f"Create a {noun} from a file (the API's create body; `get -o yaml` "
        "output works: read-only fields are ignored).",
    )
    def create(
        file: FileOption,
        output: OutputOption = Output.table,
        wait: WaitOption = False,
        timeout: TimeoutOption = None,
    ) -> None:
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


def _add_update(group: typer.Typer, noun: KindName, ref_argument: Any) -> None:
    """`ref_argument`: the REF argument (a `typer.Argument`)."""

    @command(
        group,
        "update",
        help=f"Change a {noun} to the file (PATCH): only the fields in the file that "
        "differ from it are sent, and nothing when none does, so the output of `get -o "
        "yaml` is a valid file. A new repo_ref, graph_config_path or image_uri of a "
        "deployment makes a new revision.",
    )
    def update(
        file: FileOption,
        ref: str = ref_argument,
        output: OutputOption = Output.table,
        wait: WaitOption = False,
        timeout: TimeoutOption = None,
    ) -> None:
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
            typer.echo(f"{resource_name(resource)} unchanged: nothing differs", err=True)
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
