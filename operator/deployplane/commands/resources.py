"""`deployplane deployments|revisions|listeners|repos|providers ...`: the API from a shell.

Each command is thin: parse options, make one or a few client calls through
`connection.call` (which owns error handling and exit codes), print with `output`.
Wherever a deployment or listener is taken, its name works as well as its id
(`resolve`); files go through `editing` (checked locally, only what differs is sent).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Annotated, Any, TypeVar

import typer
from rich.console import Console

from deployplane.api import models
from deployplane.api.client import ControlPlaneClient
from deployplane.commands import editing, resolve
from deployplane.commands.bodies import FileOption
from deployplane.commands.connection import (
    EXIT_CODES_HELP,
    ConnectedCommand,
    ExitCode,
    call,
    fail,
    read_connection,
)
from deployplane.commands.deleting import delete_many
from deployplane.commands.output import (
    HeadersOption,
    Output,
    OutputOption,
    print_many,
    print_one,
    resource_name,
)
from deployplane.commands.waiting import follow_revision, wait_deleted

__all__ = ["TimeoutOption", "command", "follow_new_revision", "latest_revision", "register"]

T = TypeVar("T")

LimitOption = Annotated[
    int | None,
    typer.Option("--limit", min=1, help="Show at most this many (default: all, page by page)."),
]
WaitOption = Annotated[
    bool,
    typer.Option(
        "--wait",
        help="Follow the new revision until it is terminal (exit 0 DEPLOYED, 3 otherwise).",
    ),
]
TimeoutOption = Annotated[
    float | None, typer.Option("--timeout", min=0, help="With --wait: give up after S seconds.")
]
DEPLOYMENT_REF = "Deployment name or id (or deployment/NAME)."
LISTENER_REF = "Listener compute_id or id (or listener/NAME)."


def _group(help_text: str) -> typer.Typer:
    return typer.Typer(
        no_args_is_help=True, help=f"{help_text}\n\n{EXIT_CODES_HELP}", callback=read_connection
    )


deployments = _group("Deployments of agent servers.")
revisions = _group("Revisions of a deployment.")
listeners = _group("Listeners: the compute infrastructure deployments run on.")
repos = _group("Git-host repositories available through an integration.")
providers = _group("OAuth providers.")


def command(
    group: typer.Typer, name: str, help: str | None = None
) -> Callable[[Callable[..., T]], Callable[..., T]]:
    """Register a command that takes the connection options (and prints exit codes)."""
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


def _stderr() -> Console:
    return Console(stderr=True, highlight=False)


def latest_revision(deployment: models.Deployment | None) -> str | None:
    """The id of a deployment's latest revision, if any."""
    latest = None if deployment is None else deployment.latest_revision_id
    return None if latest is None else str(latest)


def follow_new_revision(
    deployment: models.Deployment,
    before: str | None,
    output: Output,
    *,
    timeout: float | None = None,
) -> None:
    """With --wait: follow the deployment's latest revision if it is new (else there is
    nothing to wait for), then print as `deployments wait` does."""
    latest = deployment.latest_revision_id
    if latest is None or str(latest) == before:
        print_one(deployment, output)
        typer.echo(f"{resource_name(deployment)}: no new revision to wait for", err=True)
        return
    deployment_id, revision_id, console = str(deployment.id), str(latest), _stderr()
    final = call(
        lambda c: follow_revision(
            c, deployment_id, revision_id, timeout=timeout, poll_interval=2.0, console=console
        )
    )
    _print_final(final, output)


# -------------------------------------------------------------------- get/create/update


def _add_editing(group: typer.Typer, kind: editing.Kind[Any], ref_help: str) -> None:
    """`get REF`, `create -f FILE`, `update REF -f FILE` for one kind; deployments also
    take --wait on create and update."""
    waits = kind is editing.DEPLOYMENT

    @command(group, "get", help=f"Show one {kind.noun}.")
    def get(
        ref: str = typer.Argument(help=ref_help, metavar=kind.noun.upper()),
        output: OutputOption = Output.table,
    ) -> None:
        async def action(client: ControlPlaneClient) -> Any:
            return await kind.get(client, await kind.resolve(client, ref))

        print_one(call(action), output)

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
        if waits and wait:
            follow_new_revision(created, None, output, timeout=timeout)
        else:
            print_one(created, output)

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
        if waits and wait and applied.outcome is not editing.Outcome.unchanged:
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
    from deployplane.commands.connection import UsageError

    try:
        return editing.read_desired(kind, file)
    except UsageError as exc:
        fail(str(exc), ExitCode.USAGE)


# -------------------------------------------------------------------- deployments


@command(deployments, "list")
def list_deployments(
    name: Annotated[str | None, typer.Option(help="Only the deployment with this name.")] = None,
    name_contains: Annotated[
        str | None, typer.Option(help="Only deployments whose name contains this.")
    ] = None,
    status: Annotated[
        models.DeploymentStatus | None,
        typer.Option(help="Only deployments in this status.", case_sensitive=False),
    ] = None,
    deployment_type: Annotated[
        models.DeploymentType | None,
        typer.Option(help="Only git_host deployments of this type.", case_sensitive=False),
    ] = None,
    image_version: Annotated[
        str | None, typer.Option(help="Only deployments running this image version.")
    ] = None,
    limit: LimitOption = None,
    output: OutputOption = Output.table,
    no_headers: HeadersOption = False,
) -> None:
    """List deployments (the filters are the service's own query parameters)."""
    given = {
        "status": status.value if status else None,
        "deployment_type": deployment_type.value if deployment_type else None,
        "image_version": image_version,
    }
    filters: dict[str, Any] = {k: v for k, v in given.items() if v is not None}

    async def action(client: ControlPlaneClient) -> list[models.Deployment]:
        if name is not None:  # no exact-name filter is published: name_contains + match
            items = client.iter_deployments(name_contains=name, **filters)
            return [d async for d in items if d.name == name]
        items = client.iter_deployments(
            name_contains=name_contains, page_size=_page_size(limit), **filters
        )
        return await _take(items, limit)

    print_many(call(action), models.Deployment, output, headers=not no_headers)


_add_editing(deployments, editing.DEPLOYMENT, DEPLOYMENT_REF)


@command(deployments, "delete")
def delete_deployment(
    refs: Annotated[
        list[str], typer.Argument(help="Deployment names or ids (one or more).", metavar="REF")
    ],
    delete_tracing_project: Annotated[
        bool,
        typer.Option(
            "--delete-tracing-project",
            help="Delete the tracing project made with each deployment too (else it stays). "
            "Deletes one by one: the bulk operation has no such option.",
        ),
    ] = False,
    wait: Annotated[
        bool, typer.Option("--wait", help="Wait until each deployment is gone (404).")
    ] = False,
    timeout: TimeoutOption = None,
) -> None:
    """Delete deployments: one DELETE per id, or bulk (100 per call) when several.

    Prints one line per deployment: `deployment REF deleted` on stdout, or
    `error: deployment REF: why` on stderr; exits 1 if any was not deleted.
    """

    async def action(client: ControlPlaneClient) -> tuple[dict[str, str], dict[str, str]]:
        ids: dict[str, str] = {}
        failed: dict[str, str] = {}
        for ref in refs:
            try:
                ids[ref] = await resolve.deployment_id(client, ref)
            except resolve.NotResolved as exc:
                failed[ref] = str(exc)  # says which deployment itself
        unique = list(dict.fromkeys(ids.values()))
        refused = await delete_many(client, unique, delete_tracing_project)
        for ref, deployment_id in ids.items():
            if deployment_id in refused:
                failed[ref] = f"deployment {ref}: {refused[deployment_id]}"
            elif wait:
                await wait_deleted(client, deployment_id, timeout=timeout)
        return ids, failed

    ids, failed = call(action)
    err = Console(stderr=True, highlight=False, soft_wrap=True)
    for ref in refs:
        if ref in failed:
            err.print(f"error: {' '.join(failed[ref].split())}", markup=False)
        else:
            shown = ref if ref == ids[ref] else f"{ref} ({ids[ref]})"
            typer.echo(f"deployment {shown} deleted")
    if failed:
        raise typer.Exit(int(ExitCode.API_ERROR))


@command(deployments, "wait")
def wait_deployment(
    ref: Annotated[str, typer.Argument(help=DEPLOYMENT_REF, metavar="DEPLOYMENT")],
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
    console = _stderr()

    async def action(client: ControlPlaneClient) -> models.Revision:
        deployment_id = await resolve.deployment_id(client, ref)
        revision_id = revision
        if revision_id is None:
            deployment = await client.get_deployment(deployment_id)
            if deployment.latest_revision_id is None:
                fail(f"deployment {ref} has no revision yet", ExitCode.API_ERROR)
            revision_id = str(deployment.latest_revision_id)
        return await follow_revision(
            client,
            deployment_id,
            resolve.split_kind(revision_id, "revision"),
            timeout=timeout,
            poll_interval=poll_interval,
            console=console,
        )

    _print_final(call(action), output)


# ---------------------------------------------------------------------- revisions


@command(revisions, "list")
def list_revisions(
    ref: Annotated[str, typer.Argument(help=DEPLOYMENT_REF, metavar="DEPLOYMENT")],
    status: Annotated[
        models.RevisionStatus | None,
        typer.Option(help="Only revisions in this status.", case_sensitive=False),
    ] = None,
    limit: LimitOption = None,
    output: OutputOption = Output.table,
    no_headers: HeadersOption = False,
) -> None:
    """List the revisions of a deployment; ACTIVE marks the one serving (*)."""

    async def action(client: ControlPlaneClient) -> tuple[list[models.Revision], str | None]:
        deployment = await client.get_deployment(await resolve.deployment_id(client, ref))
        items = client.iter_revisions(
            str(deployment.id),
            page_size=_page_size(limit),
            status=[status.value] if status else None,
        )
        active = deployment.active_revision_id
        return await _take(items, limit), None if active is None else str(active)

    found, active = call(action)
    print_many(found, models.Revision, output, headers=not no_headers, active=active)


@command(revisions, "get")
def get_revision(
    ref: Annotated[str, typer.Argument(help=DEPLOYMENT_REF, metavar="DEPLOYMENT")],
    revision_id: Annotated[str, typer.Argument(help="Revision id.")],
    output: OutputOption = Output.table,
) -> None:
    """Show one revision."""
    rev = resolve.split_kind(revision_id, "revision")

    async def action(client: ControlPlaneClient) -> models.Revision:
        return await client.get_revision(await resolve.deployment_id(client, ref), rev)

    print_one(call(action), output)


@command(revisions, "redeploy")
def redeploy_revision(
    ref: Annotated[str, typer.Argument(help=DEPLOYMENT_REF, metavar="DEPLOYMENT")],
    revision_id: Annotated[str, typer.Argument(help="The earlier revision to roll back to.")],
    wait: WaitOption = False,
    timeout: TimeoutOption = None,
    output: OutputOption = Output.table,
) -> None:
    """Roll back: a new revision with that revision's source revision config.

    Prints the deployment; with --wait, follows the new revision and exits as
    `deployments wait` does (0 DEPLOYED, 3 ended otherwise).
    """
    rev = resolve.split_kind(revision_id, "revision")

    async def action(client: ControlPlaneClient) -> models.Deployment:
        return await client.redeploy_revision(await resolve.deployment_id(client, ref), rev)

    deployment = call(action)
    if not wait:
        print_one(deployment, output)
        return
    follow_new_revision(deployment, None, output, timeout=timeout)


# ---------------------------------------------------------------------- listeners


@command(listeners, "list")
def list_listeners(
    limit: LimitOption = None,
    output: OutputOption = Output.table,
    no_headers: HeadersOption = False,
) -> None:
    """List listeners."""

    async def action(client: ControlPlaneClient) -> list[models.Listener]:
        return await _take(client.iter_listeners(page_size=_page_size(limit)), limit)

    print_many(call(action), models.Listener, output, headers=not no_headers)


_add_editing(listeners, editing.LISTENER, LISTENER_REF)


@command(listeners, "delete")
def delete_listener(
    ref: Annotated[str, typer.Argument(help=LISTENER_REF, metavar="LISTENER")],
) -> None:
    """Delete a listener."""

    async def action(client: ControlPlaneClient) -> str:
        listener_id = await resolve.listener_id(client, ref)
        await client.delete_listener(listener_id)
        return listener_id

    listener_id = call(action)
    shown = ref if ref == listener_id else f"{ref} ({listener_id})"
    typer.echo(f"listener {shown} deleted")


# -------------------------------------------------------------- read-only lookups


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
