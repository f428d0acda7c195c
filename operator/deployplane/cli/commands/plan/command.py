"""`deployplane plan -f PATH`: options -> validate -> complete -> run, as kubectl's
`NewCmd*`. Its exit codes are `terraform plan -detailed-exitcode`'s: 0 nothing would
change, 2 something would, 1 anything refused or any error (a usage error included, so
that 2 always means "changes")."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Any, NoReturn

import click

from deployplane.cli.commands.connection import ConnectedCommand, current_options
from deployplane.cli.commands.kubeoptions import (
    kube_context_option,
    kubeconfig_option,
    namespace_option,
)
from deployplane.cli.params import EnumChoice, option

if TYPE_CHECKING:
    from deployplane.api.connection import ConnectionSettings
    from deployplane.cli.commands.kube import KubeAccess
    from deployplane.cli.commands.plan.manifests import Manifests
    from deployplane.cli.commands.plan.rows import Row

__all__ = ["PlanOptions", "plan"]

EXIT_CODES = (
    "Exit codes: 0 nothing would change; 2 something would; 1 a resource is refused, "
    "cannot be planned, or any other error."
)
ERROR = 1


class PlanOutput(StrEnum):
    table = "table"
    wide = "wide"
    json = "json"
    markdown = "markdown"


def fail(message: str) -> NoReturn:
    """One line on stderr, exit 1 (never 2: that means "changes")."""
    click.echo(f"error: {' '.join(message.split())}", err=True)
    raise click.exceptions.Exit(ERROR)


class _UsageError(click.UsageError):
    exit_code = ERROR


class PlanCommand(ConnectedCommand):
    """A usage error exits 1 too: a CI job reading 2 as "changes" must not mistake a
    typo for a plan."""

    def make_context(
        self,
        info_name: str | None,
        args: list[str],
        parent: click.Context | None = None,
        **extra: Any,
    ) -> click.Context:
        try:
            return super().make_context(info_name, args, parent, **extra)
        except click.UsageError as exc:
            raise _UsageError(exc.format_message(), exc.ctx) from None


@dataclass(frozen=True)
class PlanOptions:
    """The command line of one `plan`, as given."""

    file: str
    namespace: str | None
    output: PlanOutput
    prune: bool
    selector: str | None
    kubeconfig: str | None
    kube_context: str | None

    def complete(self) -> tuple[KubeAccess, str, Manifests]:
        """The cluster, the namespace of manifests that name none, and the manifests."""
        import os

        from deployplane.cli.commands.kube import KubeAccess, KubeError
        from deployplane.cli.commands.kubectl import KubectlNotFound, find_kubectl
        from deployplane.cli.commands.plan.manifests import (
            InputError,
            kubectl_kustomize,
            read_documents,
            sort_documents,
        )
        from deployplane.kinds import KINDS

        def kustomize(directory: Any) -> str:
            try:
                return kubectl_kustomize(find_kubectl(os.environ))(directory)
            except KubectlNotFound as exc:
                raise InputError(f"kustomization {directory}: {exc}") from None

        try:
            documents = read_documents(self.file, sys.stdin, kustomize)
            kube = KubeAccess.load(self.kubeconfig, self.kube_context)
            namespace = self.namespace or kube.namespace
            plurals = {kind.kind: kind.plural for kind in KINDS}
            return kube, namespace, sort_documents(documents, namespace, plurals)
        except (InputError, KubeError) as exc:
            fail(str(exc))


def default_connection() -> ConnectionSettings | None:
    """The connection of a resource that names none in a namespace with no `default`
    ControlPlaneConnection: the operator's own, which the plan takes from the CLI's
    (flags, DEPLOYPLANE_*, context); none given, such a resource cannot be planned."""
    from deployplane.cli.clientconfig.options import ConfigError
    from deployplane.cli.clientconfig.resolve import resolve_connection, url_given

    options = current_options()
    if not url_given(options):
        return None
    try:
        return resolve_connection(options)
    except ConfigError as exc:
        fail(str(exc))


def run(options: PlanOptions) -> list[Row]:
    """Plan every manifest (and the pruned), print, and return the rows."""
    import asyncio

    from deployplane.cli.commands.kube import KubeError
    from deployplane.cli.commands.plan import planner
    from deployplane.cli.commands.plan.cluster import Cluster
    from deployplane.kinds import KINDS

    kube, namespace, manifests = options.complete()
    connection = default_connection()
    try:
        planned = planner.Planner(Cluster(kube), manifests, KINDS, connection)
        rows = asyncio.run(
            planner.plan(
                planned, prune=options.prune, namespaces=[namespace], selector=options.selector
            )
        )
    except KubeError as exc:
        fail(str(exc))
    show(rows, options.output)
    return rows


def show(rows: list[Row], output: PlanOutput) -> None:
    from deployplane.cli.commands import tables
    from deployplane.cli.commands.options import Output
    from deployplane.cli.commands.output import print_table
    from deployplane.cli.commands.plan import render
    from deployplane.cli.commands.plan.rows import summary

    if output is PlanOutput.json:
        click.echo(render.as_json(rows))
        return
    if output is PlanOutput.markdown:
        click.echo(render.as_markdown(rows))
        return
    if not rows:
        click.echo("No resources found.", err=True)
        return
    wide = output is PlanOutput.wide
    print_table(render.COLUMNS, render.table_rows(rows), Output.wide if wide else Output.table)
    for line in render.explained(rows):
        click.echo(line)
    click.echo(f"Plan: {summary(rows)}.", err=True, color=tables.use_color(sys.stderr))


FILE_HELP = "A manifest file, a directory of them, a kustomization, or '-' for stdin."
NAMESPACE_HELP = "Namespace of manifests that name none (default: the kube context's)."
OUTPUT_HELP = (
    'table, wide (every column), json ({"items": [...]}) or markdown (a pull-request comment).'
)
PRUNE_HELP = (
    "Also plan the deletion of each live resource of the manifests' namespaces that they "
    "no longer have (honouring its deletionPolicy)."
)
SELECTOR_HELP = "With --prune: only the live resources with these labels."


@click.command("plan", cls=PlanCommand, epilog=EXIT_CODES)
@option("--file", "-f", required=True, help=FILE_HELP)
@namespace_option(NAMESPACE_HELP)
@option(
    "--output",
    "-o",
    "output_format",
    type=EnumChoice(PlanOutput),
    default=PlanOutput.table.value,
    help=OUTPUT_HELP,
)
@option("--prune", is_flag=True, help=PRUNE_HELP)
@option("--selector", "-l", help=SELECTOR_HELP)
@kubeconfig_option()
@kube_context_option
def plan(
    file: str,
    namespace: str | None,
    output_format: PlanOutput,
    prune: bool,
    selector: str | None,
    kubeconfig: str | None,
    kube_context: str | None,
) -> None:
    """Show what applying manifests would do to the control plane.

    Resource by resource: create, new-revision (why: image, source, config), rebuild,
    update, none, delete (--prune), or refused (the apiserver's dry-run said no). The
    operator's own decision, computed without writing anything: dry-runs on Kubernetes,
    reads on the control plane."""
    from deployplane.cli.commands.plan.rows import exit_code

    options = PlanOptions(file, namespace, output_format, prune, selector, kubeconfig, kube_context)
    try:
        rows = run(options)
    except click.exceptions.Exit:
        raise
    except Exception as exc:  # the one-line promise holds even for a bug of ours
        fail(f"unexpected {type(exc).__name__}: {exc}")
    raise click.exceptions.Exit(int(exit_code(rows)))
