"""`deployplane deployments list|get|create|update|delete|wait|logs|port-forward`: the
`deployments` command group (get, create and update are made by
`edit.commands.add_editing`; `logs` by `logs.register`; port-forward's workings are in
`portforward`).

Only the declarations are read when the group is loaded (its `--help`, a TAB): each
command imports what it runs.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

import click

from deployplane.api.enums import DeploymentStatus, DeploymentType
from deployplane.cli.commands import logs
from deployplane.cli.commands.completers import deployment_names
from deployplane.cli.commands.edit.commands import add_editing
from deployplane.cli.commands.kubeoptions import namespace_option
from deployplane.cli.commands.options import (
    DEPLOYMENT_REF,
    Output,
    command,
    deployment_argument,
    group,
    headers_option,
    limit_option,
    output_option,
    timeout_option,
)
from deployplane.cli.params import EnumChoice, argument, option

if TYPE_CHECKING:
    from deployplane.api import models
    from deployplane.api.client import ControlPlaneClient

__all__ = ["deployments"]

deployments = group("deployments", "Create, change, delete and wait for deployments.")


@command(deployments, "list")
@option("--name", help="Only the deployment with this name.")
@option("--name-contains", help="Only deployments whose name contains this.")
@option("--status", type=EnumChoice(DeploymentStatus), help="Only deployments in this status.")
@option(
    "--deployment-type",
    type=EnumChoice(DeploymentType),
    help="Only git_host deployments of this type.",
)
@option("--image-version", help="Only deployments running this image version.")
@limit_option
@output_option()
@headers_option
def list_deployments(
    name: str | None,
    name_contains: str | None,
    status: DeploymentStatus | None,
    deployment_type: DeploymentType | None,
    image_version: str | None,
    limit: int | None,
    output: Output,
    no_headers: bool,
) -> None:
    """List deployments (the filters are the service's own query parameters)."""
    from deployplane.api import models
    from deployplane.cli.commands.common import page_size, take
    from deployplane.cli.commands.connection import call
    from deployplane.cli.commands.output import print_many

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
            name_contains=name_contains, page_size=page_size(limit), **filters
        )
        return await take(items, limit)

    print_many(call(action), models.Deployment, output, headers=not no_headers)


add_editing(deployments, "deployment", DEPLOYMENT_REF, deployment_names)


@command(deployments, "delete")
@argument(
    "refs",
    nargs=-1,
    required=True,
    metavar="REF",
    help="Deployment names or ids (one or more).",
    shell_complete=deployment_names,
)
@option(
    "--delete-tracing-project",
    is_flag=True,
    help="Delete the tracing project made with each deployment too (else it stays). "
    "Deletes one by one: the bulk operation has no such option.",
)
@option("--wait", is_flag=True, help="Wait until each deployment is gone (404).")
@timeout_option
def delete_deployment(
    refs: tuple[str, ...], delete_tracing_project: bool, wait: bool, timeout: float | None
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
            click.echo(f"error: {' '.join(failed[ref].split())}", err=True)
        else:
            shown = ref if ref == ids[ref] else f"{ref} ({ids[ref]})"
            click.echo(f"deployment {shown} deleted")
    if failed:
        raise click.exceptions.Exit(int(ExitCode.API_ERROR))


@command(deployments, "wait")
@deployment_argument
@option("--revision", help="Revision id (default: the latest revision).")
@option("--timeout", type=click.FloatRange(min=0), help="Give up after S seconds.")
@option(
    "--poll-interval",
    type=click.FloatRange(min=0.1),
    default=2.0,
    help="First poll interval (s).",
)
@output_option()
def wait_deployment(
    ref: str, revision: str | None, timeout: float | None, poll_interval: float, output: Output
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


logs.register(deployments)


@command(deployments, "port-forward")
@deployment_argument
@argument(
    "local_port",
    type=click.IntRange(0, 65535),
    metavar="LOCAL_PORT",
    help="Port on 127.0.0.1 to listen on; 0: a free one, named in the line printed.",
)
@namespace_option(
    "Namespace the deployment runs in (default: its listener_config's, else its "
    "listener's first; without a listener: looked up in every namespace)."
)
@option(
    "--kubeconfig",
    envvar="KUBECONFIG",
    help="Kubeconfig of the cluster the deployment runs on (default: kubectl's, ~/.kube/config).",
)
def port_forward(ref: str, local_port: int, namespace: str | None, kubeconfig: str | None) -> None:
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
