"""`deployplane deployments|revisions|listeners|repos|providers ...`: the API from a shell.

Each command is thin: parse options, make one or a few client calls through
`connection.call` (which owns error handling and exit codes), print with `output`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Annotated, Any, TypeVar

import typer
from pydantic import BaseModel
from rich.console import Console

from deployplane.api import models
from deployplane.api.client import ControlPlaneClient
from deployplane.commands.bodies import FileOption, load_body
from deployplane.commands.connection import (
    EXIT_CODES_HELP,
    ConnectedCommand,
    ExitCode,
    call,
    fail,
    read_connection,
)
from deployplane.commands.deleting import delete_many
from deployplane.commands.output import Output, OutputOption, print_many, print_one
from deployplane.commands.waiting import follow_revision

__all__ = ["register"]

T = TypeVar("T")

LimitOption = Annotated[
    int | None,
    typer.Option("--limit", min=1, help="Show at most this many (default: all, page by page)."),
]


def _group(help_text: str) -> typer.Typer:
    return typer.Typer(
        no_args_is_help=True, help=f"{help_text}\n\n{EXIT_CODES_HELP}", callback=read_connection
    )


deployments = _group("Deployments of agent servers.")
revisions = _group("Revisions of a deployment.")
listeners = _group("Listeners: the compute infrastructure deployments run on.")
repos = _group("Git-host repositories available through an integration.")
providers = _group("OAuth providers.")


def _command(
    group: typer.Typer, name: str, help: str | None = None
) -> Callable[[Callable[..., T]], Callable[..., T]]:
    return group.command(name, cls=ConnectedCommand, epilog=EXIT_CODES_HELP, help=help)


async def _take(items: AsyncIterator[T], limit: int | None) -> list[T]:
    taken: list[T] = []
    async for item in items:
        taken.append(item)
        if limit is not None and len(taken) >= limit:
            break
    return taken


def _page_size(limit: int | None) -> int:
    return min(limit, 100) if limit else 100


def _print_final(final: models.Revision, output: Output) -> None:
    """Print a followed revision; exit 3 unless it ended DEPLOYED."""
    print_one(final, output)
    if final.status is not models.RevisionStatus.DEPLOYED:
        fail(f"revision {final.id} ended {final.status.value}", ExitCode.REVISION_FAILED)


@dataclass(frozen=True)
class _Editable:
    """What the get, create and update commands of a resource differ by."""

    group: typer.Typer
    noun: str
    create_body: type[BaseModel]
    patch_body: type[BaseModel]
    get: Callable[[ControlPlaneClient, str], Awaitable[BaseModel]]
    create: Callable[[ControlPlaneClient, Any], Awaitable[BaseModel]]
    update: Callable[[ControlPlaneClient, str, Any], Awaitable[BaseModel]]
    create_help: str
    update_help: str


def _add_get_create_update(kind: _Editable) -> None:
    """Register `get ID`, `create -f FILE` and `update ID -f FILE` for one resource."""
    id_help, id_name = f"{kind.noun.capitalize()} id.", f"{kind.noun}_id"

    @_command(kind.group, "get", help=f"Show one {kind.noun}.")
    def get(
        resource_id: str = typer.Argument(help=id_help, metavar=id_name),
        output: OutputOption = Output.table,
    ) -> None:
        print_one(call(lambda c: kind.get(c, resource_id)), output)

    @_command(kind.group, "create", help=kind.create_help)
    def create(file: FileOption, output: OutputOption = Output.table) -> None:
        body = load_body(file, kind.create_body)
        print_one(call(lambda c: kind.create(c, body)), output)

    @_command(kind.group, "update", help=kind.update_help)
    def update(
        file: FileOption,
        resource_id: str = typer.Argument(help=id_help, metavar=id_name),
        output: OutputOption = Output.table,
    ) -> None:
        body = load_body(file, kind.patch_body)
        print_one(call(lambda c: kind.update(c, resource_id, body)), output)


# -------------------------------------------------------------------- deployments


@_command(deployments, "list")
def list_deployments(
    name: Annotated[str | None, typer.Option(help="Only the deployment with this name.")] = None,
    name_contains: Annotated[
        str | None, typer.Option(help="Only deployments whose name contains this.")
    ] = None,
    limit: LimitOption = None,
    output: OutputOption = Output.table,
) -> None:
    """List deployments."""

    async def action(client: ControlPlaneClient) -> list[models.Deployment]:
        if name is not None:  # no exact-name filter is published: name_contains + match
            found = await client.find_deployment_by_name(name)
            return [found] if found is not None else []
        items = client.iter_deployments(name_contains=name_contains, page_size=_page_size(limit))
        return await _take(items, limit)

    print_many(call(action), models.Deployment, output)


_add_get_create_update(
    _Editable(
        deployments,
        "deployment",
        models.DeploymentCreate,
        models.DeploymentPatch,
        ControlPlaneClient.get_deployment,
        ControlPlaneClient.create_deployment,
        ControlPlaneClient.update_deployment,
        create_help="Create a deployment from a file (name, source, source_config, ...).",
        update_help="Change a deployment (PATCH): only the fields in the file are sent.\n\n"
        "A new repo_ref, graph_config_path or image_uri creates a new revision.",
    )
)


@_command(deployments, "delete")
def delete_deployment(
    deployment_ids: Annotated[list[str], typer.Argument(help="Deployment ids (one or more).")],
    delete_tracing_project: Annotated[
        bool,
        typer.Option(
            "--delete-tracing-project",
            help="Delete the tracing project made with each deployment too (else it stays). "
            "Deletes one by one: the bulk operation has no such option.",
        ),
    ] = False,
) -> None:
    """Delete deployments: one DELETE per id, or bulk (100 per call) when several.

    Exits 1 naming every id that could not be deleted (e.g. unknown ids).
    """
    failed = call(lambda c: delete_many(c, deployment_ids, delete_tracing_project))
    for deployment_id in deployment_ids:
        if deployment_id not in failed:
            typer.echo(f"deployment {deployment_id} deleted")
    if failed:
        reasons = "; ".join(f"{i}: {why}" for i, why in failed.items())
        fail(f"not deleted: {reasons}", ExitCode.API_ERROR)


@_command(deployments, "wait")
def wait_deployment(
    deployment_id: Annotated[str, typer.Argument(help="Deployment id.")],
    revision: Annotated[
        str | None,
        typer.Option("--revision", help="Revision id (default: the latest revision)."),
    ] = None,
    timeout: Annotated[
        float | None, typer.Option("--timeout", min=0, help="Give up after S seconds.")
    ] = None,
    poll_interval: Annotated[
        float, typer.Option("--poll-interval", min=0.1, help="First poll interval (s).")
    ] = 2.0,
    output: OutputOption = Output.table,
) -> None:
    """Wait until a revision is terminal, showing its status live.

    Exits 0 when it is DEPLOYED, 3 when it ended any other way (CREATE_FAILED,
    BUILD_FAILED, DEPLOY_FAILED, SKIPPED, INTERRUPTED), 4 on --timeout.
    """
    console = Console(stderr=True, highlight=False)

    async def action(client: ControlPlaneClient) -> models.Revision:
        revision_id = revision
        if revision_id is None:
            deployment = await client.get_deployment(deployment_id)
            if deployment.latest_revision_id is None:
                fail(f"deployment {deployment_id} has no revision yet", ExitCode.API_ERROR)
            revision_id = str(deployment.latest_revision_id)
        return await follow_revision(
            client,
            deployment_id,
            revision_id,
            timeout=timeout,
            poll_interval=poll_interval,
            console=console,
        )

    _print_final(call(action), output)


# ---------------------------------------------------------------------- revisions


@_command(revisions, "list")
def list_revisions(
    deployment_id: Annotated[str, typer.Argument(help="Deployment id.")],
    limit: LimitOption = None,
    output: OutputOption = Output.table,
) -> None:
    """List the revisions of a deployment."""

    async def action(client: ControlPlaneClient) -> list[models.Revision]:
        items = client.iter_revisions(deployment_id, page_size=_page_size(limit))
        return await _take(items, limit)

    print_many(call(action), models.Revision, output)


@_command(revisions, "get")
def get_revision(
    deployment_id: Annotated[str, typer.Argument(help="Deployment id.")],
    revision_id: Annotated[str, typer.Argument(help="Revision id.")],
    output: OutputOption = Output.table,
) -> None:
    """Show one revision."""
    print_one(call(lambda c: c.get_revision(deployment_id, revision_id)), output)


@_command(revisions, "redeploy")
def redeploy_revision(
    deployment_id: Annotated[str, typer.Argument(help="Deployment id.")],
    revision_id: Annotated[str, typer.Argument(help="The earlier revision to roll back to.")],
    wait: Annotated[
        bool, typer.Option("--wait", help="Follow the new revision until it is terminal.")
    ] = False,
    output: OutputOption = Output.table,
) -> None:
    """Roll back: a new revision with that revision's source revision config.

    Prints the deployment; with --wait, follows the new revision and exits as
    `deployments wait` does (0 DEPLOYED, 3 ended otherwise).
    """
    deployment = call(lambda c: c.redeploy_revision(deployment_id, revision_id))
    if not wait or deployment.latest_revision_id is None:
        print_one(deployment, output)
        return
    console = Console(stderr=True, highlight=False)
    new_revision = str(deployment.latest_revision_id)
    final = call(
        lambda c: follow_revision(
            c, deployment_id, new_revision, timeout=None, poll_interval=2.0, console=console
        ),
    )
    _print_final(final, output)


# ---------------------------------------------------------------------- listeners


@_command(listeners, "list")
def list_listeners(
    limit: LimitOption = None,
    output: OutputOption = Output.table,
) -> None:
    """List listeners."""

    async def action(client: ControlPlaneClient) -> list[models.Listener]:
        return await _take(client.iter_listeners(page_size=_page_size(limit)), limit)

    print_many(call(action), models.Listener, output)


_add_get_create_update(
    _Editable(
        listeners,
        "listener",
        models.ListenerCreate,
        models.ListenerPatch,
        ControlPlaneClient.get_listener,
        ControlPlaneClient.create_listener,
        ControlPlaneClient.update_listener,
        create_help="Create a listener from a file "
        "(compute_type, compute_id, compute_config, version).",
        update_help="Change a listener (PATCH): version and compute_config, "
        "the fields in the file.",
    )
)


@_command(listeners, "delete")
def delete_listener(
    listener_id: Annotated[str, typer.Argument(help="Listener id.")],
) -> None:
    """Delete a listener."""
    call(lambda c: c.delete_listener(listener_id))
    typer.echo(f"listener {listener_id} deleted")


# -------------------------------------------------------------- read-only lookups


@_command(repos, "list")
def list_repositories(
    integration_id: Annotated[str, typer.Argument(help="Git-host integration id.")],
    output: OutputOption = Output.table,
) -> None:
    """List the repositories an integration can deploy from."""
    print_many(call(lambda c: c.list_repositories(integration_id)), models.GitRepository, output)


@_command(providers, "get")
def get_provider(
    provider_id: Annotated[str, typer.Argument(help="OAuth provider id.")],
    output: OutputOption = Output.table,
) -> None:
    """Show one OAuth provider."""
    print_one(call(lambda c: c.get_oauth_provider(provider_id)), output)


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
