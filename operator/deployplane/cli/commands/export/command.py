"""`deployplane export`: existing deployments and listeners as custom resources to apply.

Reads only, with the published contract's listings (deployments through
`name_contains` and `offset`, listeners page by page); what the resources say is
`deployplane.cli.commands.export.cr`'s, pure. Deployments an AgentDeployment of the
cluster already manages are skipped (`managed`), unless `--include-managed`: applying
their export would make an ObserveOnly twin of a managed resource. Resources go to
stdout as one multi-document YAML stream (`-o json`: one List), or with `--dir DIR` one
file each; everything meant for the user (files written, resources skipped, the Secrets
to create) goes to stderr, so stdout can be piped to `kubectl apply -f -`.

The command's definition is read without its dependencies (the models, YAML, the
Kubernetes client): they are imported when it runs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING

import click

from deployplane.cli.commands.connection import (
    EXIT_CODES_HELP,
    ConnectedCommand,
    ExitCode,
    call,
    fail,
)
from deployplane.cli.commands.kubeoptions import (
    kube_context_option,
    kubeconfig_option,
    namespace_option,
)
from deployplane.cli.params import EnumChoice, option

if TYPE_CHECKING:
    from pathlib import Path

    from deployplane.api.client import ControlPlaneClient
    from deployplane.api.models import Deployment, Listener
    from deployplane.cli.commands.export.cr import Export, Exported, Policy, Skipped
    from deployplane.cli.commands.export.managed import Managers

__all__ = ["ExportOptions", "ExportOutput", "export", "read_resources"]

_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
AGENTDEPLOYMENTS = "agentdeployments"


class ExportOutput(StrEnum):
    """What the custom resources are written as."""

    yaml = "yaml"
    json = "json"


@dataclass(frozen=True)
class ControlPlaneResources:
    deployments: list[Deployment]
    listeners: list[Listener]


async def read_resources(
    client: ControlPlaneClient, name_contains: str | None, with_listeners: bool
) -> ControlPlaneResources:
    """The deployments whose name contains `name_contains` (all without it) and, when
    asked, the listeners: those the deployments run on, and those whose computeId
    contains `name_contains` (all without it). The listener listing has no filter: it is
    read whole and filtered here."""
    deployments = [d async for d in client.iter_deployments(name_contains=name_contains)]
    if not with_listeners:
        return ControlPlaneResources(deployments, [])
    used = {d.source_config.listener_id for d in deployments if d.source_config}
    listeners = [
        li
        async for li in client.iter_listeners()
        if li.id in used or name_contains is None or name_contains in li.compute_id
    ]
    return ControlPlaneResources(deployments, listeners)


def read_managers(kubeconfig: str | None, kube_context: str | None) -> Managers:
    """The AgentDeployments of the cluster, in every namespace (in the kube context's
    own when listing every namespace is forbidden); none when the cluster does not
    serve the kind. `KubeError` when the cluster cannot be read."""
    from deployplane.cli.commands.export.managed import Managers
    from deployplane.cli.commands.kube import KubeAccess, KubeError

    kube = KubeAccess.load(kubeconfig, kube_context)
    try:
        found = kube.custom_resources(AGENTDEPLOYMENTS, None)
    except KubeError as exc:
        if exc.status != 403:
            raise
        found = kube.custom_resources(AGENTDEPLOYMENTS, kube.namespace)
    return Managers.of(found)


def _say(line: str) -> None:
    click.echo(line, err=True)


def _document(item: Exported, fmt: ExportOutput) -> str:
    import json

    import yaml

    if fmt is ExportOutput.json:
        return json.dumps(item.body, indent=2) + "\n"
    return yaml.safe_dump(item.body, sort_keys=False, allow_unicode=True)


def _stream(result: Export, fmt: ExportOutput) -> str:
    """Every resource as one text: YAML documents, or one JSON List (as kubectl)."""
    if fmt is ExportOutput.yaml:
        return "---\n".join(_document(item, fmt) for item in result.resources)
    import json

    items = [item.body for item in result.resources]
    return json.dumps({"apiVersion": "v1", "kind": "List", "items": items}, indent=2) + "\n"


def _write_files(result: Export, directory: Path, fmt: ExportOutput) -> None:
    try:
        directory.mkdir(parents=True, exist_ok=True)
        for item in result.resources:
            path = directory / f"{item.kind.lower()}-{item.name}.{fmt.value}"
            path.write_text(_document(item, fmt), encoding="utf-8")
            _say(f"wrote {path}")
    except OSError as exc:
        fail(f"cannot write to {directory}: {exc.strerror or exc}", ExitCode.USAGE)


def _tell(result: Export, policy: Policy, namespace: str | None) -> None:
    for skipped in result.skipped:
        _say(f"skipped {skipped.what}: {skipped.reason}")
    kinds = [item.kind for item in result.resources]
    _say(
        f"exported {kinds.count('AgentDeployment')} deployment(s) and "
        f"{kinds.count('Listener')} listener(s), managementPolicy {policy.value}"
    )
    if not result.secrets:
        return
    _say(
        "create these Secrets before applying, with the values the deployments have now "
        "(they are write-only on the control plane: never read, never exported):"
    )
    where = f" -n {namespace}" if namespace else ""
    for secret in result.secrets:
        literals = " ".join(f"--from-literal={key}=..." for key in secret.keys)
        _say(
            f"  kubectl{where} create secret generic {secret.name} {literals}"
            f"   # for {secret.owner}"
        )


@dataclass(frozen=True)
class ExportOptions:
    """The command line of one `export`, as given (kubectl's `*Options`: options ->
    validate -> complete -> run)."""

    name_contains: str | None
    listeners: bool
    directory: Path | None
    output: ExportOutput
    manage: bool
    namespace: str | None
    include_managed: bool = False
    kubeconfig: str | None = None
    kube_context: str | None = None

    @property
    def policy(self) -> Policy:
        from deployplane.cli.commands.export.cr import Policy

        return Policy.FULL if self.manage else Policy.OBSERVE_ONLY

    def validate(self) -> None:
        """Usage errors (exit 2) before any request."""
        if self.namespace is not None and not _DNS_LABEL.match(self.namespace):
            fail(f"invalid namespace {self.namespace!r}: not a DNS-1123 label", ExitCode.USAGE)

    def complete(self) -> tuple[ControlPlaneResources, Managers]:
        """What the control plane has (reads only, through the one error boundary), and
        which of its deployments AgentDeployments already manage (none looked up with
        --include-managed)."""
        from deployplane.cli.commands.export.managed import Managers
        from deployplane.cli.commands.kube import KubeError

        found = call(lambda client: read_resources(client, self.name_contains, self.listeners))
        if self.include_managed:
            return found, Managers()
        try:
            return found, read_managers(self.kubeconfig, self.kube_context)
        except KubeError as exc:
            fail(
                f"cannot tell which deployments AgentDeployments already manage ({exc}): "
                "pass --kubeconfig, or --include-managed to export them all",
                ExitCode.API_ERROR,
            )


def unmanaged(
    found: ControlPlaneResources, managers: Managers
) -> tuple[list[Deployment], list[Skipped]]:
    """The deployments to export, and a `Skipped` for each one already managed."""
    from deployplane.cli.commands.export.cr import Skipped

    kept: list[Deployment] = []
    skipped: list[Skipped] = []
    for dep in found.deployments:
        manager = managers.manager_of(str(dep.id), dep.name)
        if manager is None:
            kept.append(dep)
        else:
            reason = f"managed by agentdeployment {manager} already (--include-managed exports it)"
            skipped.append(Skipped(f"deployment {dep.name} ({dep.id})", reason))
    return kept, skipped


def run(options: ExportOptions, found: ControlPlaneResources, managers: Managers) -> None:
    """Make the custom resources of what was read, and write them out."""
    from deployplane.cli.commands.export.cr import Export, ExportNameError, export

    kept, skipped = unmanaged(found, managers)
    try:
        made = export(kept, found.listeners, options.policy, options.namespace)
    except ExportNameError as exc:
        fail(str(exc), ExitCode.API_ERROR)
    result = Export(made.resources, [*skipped, *made.skipped])
    if options.directory is not None:
        _write_files(result, options.directory, options.output)
    elif result.resources:
        click.echo(_stream(result, options.output), nl=False)
    _tell(result, options.policy, options.namespace)


@click.command("export", cls=ConnectedCommand, epilog=EXIT_CODES_HELP)
@option(
    "--name-contains",
    help="Only deployments whose name contains this (and, with --listeners, listeners "
    "whose computeId does).",
)
@option(
    "--listeners",
    is_flag=True,
    help="Export listeners too (those the exported deployments run on, and those "
    "matching --name-contains); deployments then name them with listenerRef.",
)
@option(
    "--dir",
    "-d",
    "directory",
    type=click.Path(file_okay=False),
    help="Write one file per resource into this directory (created if needed) instead "
    "of one stream on stdout.",
)
@option(
    "--output",
    "-o",
    type=EnumChoice(ExportOutput),
    default=ExportOutput.yaml.value,
    help="yaml (documents separated by ---) or json (one List).",
)
@option(
    "--manage",
    is_flag=True,
    help="managementPolicy Full (the operator takes them over) instead of ObserveOnly "
    "(it only reports them).",
)
@namespace_option("metadata.namespace of every resource.")
@option(
    "--include-managed",
    is_flag=True,
    help="Also export the deployments an AgentDeployment of the cluster already manages "
    "(skipped by default, one line each), without reading the cluster.",
)
@kubeconfig_option(
    "Kubeconfig of the cluster whose AgentDeployments to check (default: $KUBECONFIG, "
    "~/.kube/config)."
)
@kube_context_option
def export(
    name_contains: str | None,
    listeners: bool,
    directory: str | None,
    output: ExportOutput,
    manage: bool,
    namespace: str | None,
    include_managed: bool,
    kubeconfig: str | None,
    kube_context: str | None,
) -> None:
    """Write existing deployments and listeners as custom resources.

    AgentDeployment (and Listener) YAML that `kubectl apply` accepts as is: each adopts
    its control-plane resource by id, ObserveOnly unless --manage, with exactly the spec
    the service reports, so the operator finds nothing to change. Deployments an
    AgentDeployment of the cluster already manages are skipped. Secret values are never
    readable: each secret becomes a secretKeyRef to a Secret named after the resource,
    listed on stderr for you to create. Reads only."""
    from pathlib import Path

    options = ExportOptions(
        name_contains,
        listeners,
        None if directory is None else Path(directory),
        output,
        manage,
        namespace,
        include_managed,
        kubeconfig,
        kube_context,
    )
    options.validate()
    found, managers = options.complete()
    run(options, found, managers)
