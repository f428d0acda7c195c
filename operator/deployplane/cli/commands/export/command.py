"""`deployplane export`: existing deployments and listeners as custom resources to apply.

Reads only, with the published contract's listings (deployments through
`name_contains` and `offset`, listeners page by page); what the resources say is
`deployplane.cli.commands.export.cr`'s, pure. Resources go to stdout as one multi-document
YAML stream, or with `-o DIR` one file each; everything meant for the user (files
written, resources skipped, the Secrets to create) goes to stderr, so stdout can be
piped to `kubectl apply -f -`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

import typer
import yaml

from deployplane.api.client import ControlPlaneClient
from deployplane.api.models import Deployment, Listener
from deployplane.cli.commands.connection import ExitCode, call, fail
from deployplane.cli.commands.export.cr import Export, Exported, ExportNameError, Policy, export

__all__ = ["ExportOptions", "export_command", "read_resources"]

_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")


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


def _say(line: str) -> None:
    typer.echo(line, err=True)


def _document(item: Exported) -> str:
    return yaml.safe_dump(item.body, sort_keys=False, allow_unicode=True)


def _write_files(result: Export, directory: Path) -> None:
    try:
        directory.mkdir(parents=True, exist_ok=True)
        for item in result.resources:
            path = directory / f"{item.kind.lower()}-{item.name}.yaml"
            path.write_text(_document(item), encoding="utf-8")
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
    output_dir: Path | None
    manage: bool
    namespace: str | None

    @property
    def policy(self) -> Policy:
        return Policy.FULL if self.manage else Policy.OBSERVE_ONLY

    def validate(self) -> None:
        """Usage errors (exit 2) before any request."""
        if self.namespace is not None and not _DNS_LABEL.match(self.namespace):
            fail(f"invalid namespace {self.namespace!r}: not a DNS-1123 label", ExitCode.USAGE)

    def complete(self) -> ControlPlaneResources:
        """What the control plane has (reads only, through the one error boundary)."""
        return call(lambda client: read_resources(client, self.name_contains, self.listeners))


def run(options: ExportOptions, found: ControlPlaneResources) -> None:
    """Make the custom resources of what was read, and write them out."""
    try:
        result = export(found.deployments, found.listeners, options.policy, options.namespace)
    except ExportNameError as exc:
        fail(str(exc), ExitCode.API_ERROR)
    if options.output_dir is not None:
        _write_files(result, options.output_dir)
    elif result.resources:
        typer.echo("---\n".join(_document(item) for item in result.resources), nl=False)
    _tell(result, options.policy, options.namespace)


def export_command(
    name_contains: Annotated[
        str | None,
        typer.Option(
            "--name-contains",
            help="Only deployments whose name contains this (and, with --listeners, "
            "listeners whose computeId does).",
        ),
    ] = None,
    listeners: Annotated[
        bool,
        typer.Option(
            "--listeners",
            help="Export listeners too (those the exported deployments run on, and those "
            "matching --name-contains); deployments then name them with listenerRef.",
        ),
    ] = False,
    output_dir: Annotated[
        Path | None,
        typer.Option(
            "--output-dir",
            "-o",
            help="Write one file per resource into this directory (created if needed) "
            "instead of one YAML stream on stdout.",
            file_okay=False,
        ),
    ] = None,
    manage: Annotated[
        bool,
        typer.Option(
            "--manage",
            help="managementPolicy Full (the operator takes them over) instead of "
            "ObserveOnly (it only reports them).",
        ),
    ] = False,
    namespace: Annotated[
        str | None,
        typer.Option("--namespace", "-n", help="metadata.namespace of every resource."),
    ] = None,
) -> None:
    """Write existing deployments (and listeners) as AgentDeployment (and Listener) YAML
    that `kubectl apply` accepts as is: each adopts its control-plane resource by id,
    ObserveOnly unless --manage, with exactly the spec the service reports, so the
    operator finds nothing to change. Secret values are never readable: each secret
    becomes a secretKeyRef to a Secret named after the resource, listed on stderr for you
    to create. Reads only."""
    options = ExportOptions(name_contains, listeners, output_dir, manage, namespace)
    options.validate()
    run(options, options.complete())
