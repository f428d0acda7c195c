"""`deployplane deployments list|get|create|update|delete|wait|logs|port-forward`: the
`deployments` command group (get, create and update are made by
`edit.commands.add_editing`; `logs` by `logs.register`; port-forward's workings are in
`portforward`).

Only the commands' signatures are read when the group is loaded (its `--help`, shell
completion): each body imports what it runs.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Annotated, Any

import typer

from deployplane.api.enums import DeploymentStatus, DeploymentType
from deployplane.cli.commands import logs
from deployplane.cli.commands.completers import deployment_names
from deployplane.cli.commands.edit.commands import add_editing
from deployplane.cli.commands.options import (
    DEPLOYMENT_REF,
    AgentEnvironmentOption,
    AgentIdOption,
    DeploymentArgument,
    HeadersOption,
    LimitOption,
    Output,
    OutputOption,
    TimeoutOption,
    command,
    group,
)

if TYPE_CHECKING:
    from deployplane.api import models
    from deployplane.api.client import ControlPlaneClient

__all__ = ["app"]

app = group("Deployments of agent servers.")


@command(app, "list")
def list_deployments(
    name: Annotated[str | None, typer.Option(help="Only the deployment with this name.")] = None,
    name_contains: Annotated[
        str | None, typer.Option(help="Only deployments whose name contains this.")
    ] = None,
    status: Annotated[
        DeploymentStatus | None,
        typer.Option(help="Only deployments in this status.", case_sensitive=False),
    ] = None,
    deployment_type: Annotated[
        DeploymentType | None,
        typer.Option(help="Only git_host deployments of this type.", case_sensitive=False),
    ] = None,
    image_version: Annotated[
        str | None, typer.Option(help="Only deployments running this image version.")
    ] = None,
    agent_id: AgentIdOption = None,
    agent_environment: AgentEnvironmentOption = None,
    limit: LimitOption = None,
    output: OutputOption = Output.table,
    no_headers: HeadersOption = False,
) -> None:
    """List deployments (the filters are the service's own query parameters; --agent-id
    and --agent-environment, the vendor CLI's, list the deployments of that agent, in
    that environment)."""
    from deployplane.api import models
    from deployplane.cli.commands.common import page_size, take
    from deployplane.cli.commands.connection import ExitCode, call, fail
    from deployplane.cli.commands.output import print_many

    if agent_id is not None and not agent_id.strip():
        fail("--agent-id must not be empty", ExitCode.USAGE)
    given = {
        "status": status.value if status else None,
        "deployment_type": deployment_type.value if deployment_type else None,
        "image_version": image_version,
        "agent_id": agent_id,
        "agent_environment": agent_environment.value if agent_environment else None,
    }
    filters: dict[str, Any] = {k: v for k, v in given.items() if v is not None}

    async def action(client: ControlPlaneClient) -> list[models.Deployment]:
        if name is not None:  # no exact-name filter is published: name_contains + match
            items = client.iter_deployments(name_contains=name, **filters)
            return [d async for d in items if d.name == name]
        items = client.iter_deployments(
            name_contains=name_contains, page_size=page_size(limit), **filters
        )
        return await take(items, limit)

    print_many(call(action), models.Deployment, output, headers=not no_headers)


add_editing(app, "deployment", DEPLOYMENT_REF, deployment_names)


@command(app, "delete")
def delete_deployment(
    refs: Annotated[
        list[str],
        typer.Argument(
            help="Deployment names or ids (one or more).",
            metavar="REF",
            autocompletion=deployment_names,
        ),
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
    from deployplane.cli.commands import resolve
    from deployplane.cli.commands.connection import ExitCode, call
    from deployplane.cli.commands.deleting import delete_many
    from deployplane.cli.commands.waiting import wait_deleted

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
    for ref in refs:
        if ref in failed:
            typer.echo(f"error: {' '.join(failed[ref].split())}", err=True)
        else:
            shown = ref if ref == ids[ref] else f"{ref} ({ids[ref]})"
            typer.echo(f"deployment {shown} deleted")
    if failed:
        raise typer.Exit(int(ExitCode.API_ERROR))


@command(app, "wait")
def wait_deployment(
    ref: DeploymentArgument,
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
    from deployplane.cli.commands import resolve
    from deployplane.cli.commands.common import print_final, stderr_console
    from deployplane.cli.commands.connection import ExitCode, call, fail
    from deployplane.cli.commands.waiting import follow_revision

    console = stderr_console()

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

    print_final(call(action), output)


logs.register(app)


@command(app, "port-forward")
def port_forward(
    ref: DeploymentArgument,
    local_port: Annotated[
        int,
        typer.Argument(
            min=0,
            max=65535,
            metavar="LOCAL_PORT",
            help="Port on 127.0.0.1 to listen on; 0: a free one, named in the line printed.",
        ),
    ],
    namespace: Annotated[
        str | None,
        typer.Option(
            "--namespace",
            "-n",
            help="Namespace the deployment runs in (default: its listener_config's, else "
            "its listener's first; without a listener: looked up in every namespace).",
        ),
    ] = None,
    kubeconfig: Annotated[
        str | None,
        typer.Option(
            "--kubeconfig",
            envvar="KUBECONFIG",
            show_envvar=True,
            help="Kubeconfig of the cluster the deployment runs on (default: kubectl's, "
            "~/.kube/config).",
        ),
    ] = None,
) -> None:
    """Reach a deployment's agent server on 127.0.0.1:LOCAL_PORT until Ctrl-C.

    A real port-forward through the kubelet: `kubectl port-forward` of its
    agent-server Service. Prints one line once listening; then try
    `curl http://127.0.0.1:LOCAL_PORT/ok`. kubectl comes from
    $DEPLOYPLANE_TOOLS_BIN, else PATH, else the dev cluster's tool cache.
    """
    from deployplane.cli.commands import portforward
    from deployplane.cli.commands.connection import ExitCode, call, fail

    try:
        kubeconfig = portforward.kubeconfig_of(kubeconfig, os.environ)
    except portforward.ForwardError as exc:
        fail(f"port-forward: {exc}", ExitCode.USAGE)
    target = call(lambda client: portforward.target_of(client, ref, namespace))
    try:
        kubectl = portforward.find_kubectl(os.environ)
        where, service = portforward.find_service(kubectl, target, kubeconfig)
        argv = portforward.forward_argv(kubectl, where, service, local_port, kubeconfig)

        def announce(port: int) -> str:
            return (
                f"forwarding http://127.0.0.1:{port} -> deployment {target.name} "
                f"({where}/service/{service}:{portforward.SERVER_PORT}); Ctrl-C to stop"
            )

        portforward.run_forward(argv, announce)
    except portforward.ForwardError as exc:
        fail(f"port-forward: {exc}", ExitCode.API_ERROR)
