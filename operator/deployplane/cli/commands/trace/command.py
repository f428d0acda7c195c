"""`deployplane trace KIND/NAME`: a custom resource and everything it leads to, as a tree.

Reads only: GETs on Kubernetes (the resource, its Listener, its ControlPlaneConnection
and API key Secret, the data plane's objects) and on the control plane (deployment,
revisions, listener). The control plane is the resource's connection (its `connectionRef`,
else its namespace's `default` ControlPlaneConnection), else the CLI's connection (flags,
DEPLOYPLANE_* variables, context), which is why the kube context is `--kube-context`
here (as in helm): `--context` is the CLI's.

Exit 0 when the tree was printed, whatever it shows; 1 with one line when the resource
itself cannot be read (no such resource, Kubernetes unreachable).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Any

import click

from deployplane.cli.commands import connection
from deployplane.cli.commands.connection import EXIT_CODES_HELP, ConnectedCommand
from deployplane.cli.commands.kubeoptions import (
    kube_context_option,
    kubeconfig_option,
    namespace_option,
)
from deployplane.cli.commands.options import Output
from deployplane.cli.params import EnumChoice, argument, option

if TYPE_CHECKING:
    from deployplane.cli.commands.trace.readers import KubeAccess

__all__ = ["TraceOptions", "parse_reference", "trace"]

TRACEABLE = ("AgentDeployment", "Listener")
"""The kinds with a tree below them (a ControlPlaneConnection has none)."""


class TraceOutput(StrEnum):
    """`-o name` has no meaning for a tree."""

    table = "table"
    wide = "wide"
    json = "json"
    yaml = "yaml"


def parse_reference(reference: str, name: str | None) -> tuple[str, str]:
    """(kind, name) of `agd/bot`, `agentdeployment.deployplane.io/bot` or `agd bot`:
    every name kubectl accepts for the kinds (kind, plural, singular, short names)."""
    from deployplane.kinds import KINDS

    kind_word, _, ref_name = reference.partition("/")
    if not ref_name:
        if not name:
            raise ValueError(f"give KIND/NAME or KIND NAME, not {reference!r}")
        ref_name = name
    elif name:
        raise ValueError(f"give KIND/NAME or KIND NAME, not both ({reference!r} {name!r})")
    if "/" in ref_name:  # as kubectl: a name has no slash (`agd/a/b` is no resource)
        raise ValueError(f"a name has no '/': {ref_name!r}")
    word = kind_word.lower().removesuffix(".deployplane.io")
    traceable = [kind for kind in KINDS if kind.kind in TRACEABLE]
    for kind in traceable:
        if word in (kind.kind.lower(), kind.plural, kind.singular, *kind.short_names):
            return kind.kind, ref_name
    known = ", ".join(k.singular for k in traceable)
    raise ValueError(f"cannot trace {kind_word!r}: give one of {known}")


@dataclass(frozen=True)
class TraceOptions:
    """The command line of one `trace`, as given (kubectl's `*Options`: options ->
    complete -> validate -> run)."""

    reference: str
    name: str | None
    namespace: str | None
    kubeconfig: str | None
    kube_context: str | None
    output: Output

    def validate(self) -> tuple[str, str]:
        """(kind, name) from the arguments; a usage error (exit 2) names what is wrong.
        Run first: it needs nothing from the cluster, so a typo never waits on one."""
        try:
            return parse_reference(self.reference, self.name)
        except ValueError as exc:
            connection.fail(str(exc), connection.ExitCode.USAGE)

    def complete(self) -> tuple[KubeAccess, str]:
        """The Kubernetes access and the namespace (the kube context's by default);
        exit 1 when Kubernetes cannot be reached."""
        from deployplane.cli.commands.trace.readers import KubeAccess, KubeError

        try:
            kube = KubeAccess.load(self.kubeconfig, self.kube_context)
        except KubeError as exc:
            connection.fail(str(exc), connection.ExitCode.API_ERROR)
        return kube, self.namespace or kube.namespace


def run(kube: KubeAccess, namespace: str, kind: str, name: str, output: Output) -> None:
    """Read the resource, walk what it leads to, print the tree."""
    from deployplane.cli.commands import tables
    from deployplane.cli.commands.output import dump_text, print_table
    from deployplane.cli.commands.trace import tree
    from deployplane.cli.commands.trace.readers import KubeError
    from deployplane.cli.commands.trace.walk import trace_agentdeployment, trace_listener
    from deployplane.kinds import KINDS

    noun = KINDS[kind]
    try:
        obj: Mapping[str, Any] | None = kube.custom_resource(noun.plural, namespace, name)
    except KubeError as exc:
        connection.fail(str(exc), connection.ExitCode.API_ERROR)
    if obj is None:
        connection.fail(
            f"{noun.singular} {name} not found in namespace {namespace}",
            connection.ExitCode.API_ERROR,
        )
    walk = trace_agentdeployment if kind == "AgentDeployment" else trace_listener
    with connection.error_boundary():
        found = walk(kube, namespace, obj)
    if output in (Output.json, Output.yaml):
        click.echo(dump_text(tree.to_data(found), output))
        return
    print_table(tree.COLUMNS, tree.rows(found, tables.now()), output)


@click.command("trace", cls=ConnectedCommand, epilog=EXIT_CODES_HELP)
@argument("reference", help="agentdeployment/NAME or listener/NAME (or agd, dpl...).")
@argument("name", required=False, help="NAME, when KIND is given alone.")
@namespace_option("Namespace (default: the kube context's).")
@kubeconfig_option()
@kube_context_option
@option(
    "--output",
    "-o",
    "output_format",
    type=EnumChoice(TraceOutput),
    default=TraceOutput.table.value,
    help="table, wide (every column), json or yaml.",
)
def trace(
    reference: str,
    name: str | None,
    namespace: str | None,
    kubeconfig: str | None,
    kube_context: str | None,
    output_format: TraceOutput,
) -> None:
    """Show a resource and everything it leads to, as a tree.

    The control-plane deployment, its latest and active revisions, its listener and the
    workloads in the listener's cluster. Reads only. A missing piece is a line with its
    reason; exit 1 only when the resource itself cannot be read."""
    options = TraceOptions(
        reference, name, namespace, kubeconfig, kube_context, Output(output_format.value)
    )
    kind, resource_name = options.validate()
    kube, where = options.complete()
    run(kube, where, kind, resource_name, options.output)
