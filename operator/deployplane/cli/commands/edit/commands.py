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
    agent_environment_option,
    agent_id_option,
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
    help_text = (
        f"Create a {noun} from a file.\n\nThe API's create body; the output of "
        "`get -o yaml` works (its read-only fields are ignored)."
    )
    if noun == "listener":

        @command(group, "create", help=help_text)
        @file_option
        @output_option()
        @wait_option
        @timeout_option
        def create(file: str, output: Output, wait: bool, timeout: float | None) -> None:
            _create(noun, file, output, wait=wait, timeout=timeout)

        return

    @command(
        group,
        "create",
        help=help_text + " With --agent-id and --agent-environment, the deployment of "
        "that agent in that environment: the control plane names it, and keeps one per "
        "agent and environment (the file then names no deployment).",
    )
    @file_option
    @output_option()
    @wait_option
    @timeout_option
    @agent_id_option
    @agent_environment_option
    def create_deployment(
        file: str,
        output: Output,
        wait: bool,
        timeout: float | None,
        agent_id: str | None,
        agent_environment: str | None,
    ) -> None:
        agent = _agent_of(agent_id, agent_environment)
        _create(noun, file, output, wait=wait, timeout=timeout, agent=agent)


def _agent_of(agent_id: str | None, environment: str | None) -> dict[str, str] | None:
    """--agent-id and --agent-environment, given together or not at all."""
    from deployplane.cli.commands.connection import ExitCode, fail

    if agent_id is None and environment is None:
        return None
    if agent_id is None or not agent_id.strip() or environment is None:
        fail("--agent-id and --agent-environment are required together", ExitCode.USAGE)
    return {"agent_id": agent_id, "environment": str(environment)}


def _create(
    noun: KindName,
    file: str,
    output: Output,
    *,
    wait: bool = False,
    timeout: float | None = None,
    agent: dict[str, str] | None = None,
) -> None:
    from deployplane.cli.commands.common import follow_new_revision
    from deployplane.cli.commands.connection import call
    from deployplane.cli.commands.edit import editing
    from deployplane.cli.commands.output import print_one

    kind = _kind(noun)
    (desired,) = _one_document(kind, file)
    if agent is not None:
        desired = _for_agent(desired, agent)
    created = call(lambda c: editing.create(c, kind, desired))
    if kind is editing.DEPLOYMENT and wait:
        follow_new_revision(created, None, output, timeout=timeout)
    else:
        print_one(created, output)


def _for_agent(desired: Any, agent: dict[str, str]) -> Any:
    """The deployment file made for the agent of the flags (one line, exit 2, if not)."""
    from deployplane.api.models import AGENT_ID_MAX_LENGTH, DeploymentAgent
    from deployplane.cli.commands.connection import ExitCode, fail
    from deployplane.cli.commands.edit import planning

    agent_id = agent["agent_id"]
    if agent_id != agent_id.strip() or len(agent_id) > AGENT_ID_MAX_LENGTH:
        fail(
            f"--agent-id must have at most {AGENT_ID_MAX_LENGTH} characters and no "
            "whitespace at either end",
            ExitCode.USAGE,
        )
    try:
        return planning.for_agent(desired, DeploymentAgent.model_validate(agent))
    except planning.PlanError as exc:
        fail(str(exc), ExitCode.USAGE)


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
