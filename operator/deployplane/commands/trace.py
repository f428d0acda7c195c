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

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from enum import StrEnum
from typing import Annotated, Any, TypeVar

import typer

from deployplane.api.client import ControlPlaneClient
from deployplane.api.connection import ConnectionSettings
from deployplane.api.models import Listener
from deployplane.commands import connection, tables, tracereaders, tracetree
from deployplane.commands.output import Output, dump_text, print_table
from deployplane.commands.tracereaders import KubeAccess, KubeError
from deployplane.commands.tracetree import Missing, Node, Workloads
from deployplane.crd.specs import DEFAULT_CONNECTION
from deployplane.dataplane.render.context import namespace_for
from deployplane.dataplane.render.model import RenderError
from deployplane.kinds import KINDS

__all__ = ["parse_reference", "trace"]

T = TypeVar("T")

TRACEABLE = ("AgentDeployment", "Listener")
"""The kinds with a tree below them (a ControlPlaneConnection has none)."""

CONNECTIONS = KINDS["ControlPlaneConnection"].plural


class TraceOutput(StrEnum):
    """`-o name` has no meaning for a tree."""

    table = "table"
    wide = "wide"
    json = "json"
    yaml = "yaml"


def parse_reference(reference: str, name: str | None) -> tuple[str, str]:
    """(kind, name) of `agd/bot`, `agentdeployment.deployplane.io/bot` or `agd bot`:
    every name kubectl accepts for the kinds (kind, plural, singular, short names)."""
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


def _settings(
    kube: KubeAccess, namespace: str, obj: Mapping[str, Any]
) -> ConnectionSettings | Missing:
    """The control plane the operator uses for this resource, as far as the CLI knows:
    `connectionRef` resolved as the operator does (`externals.connections`), and with
    none the namespace's `default` connection, else the CLI's own connection."""
    ref = (obj.get("spec") or {}).get("connectionRef") or {}
    name, kind = ref.get("name"), ref.get("kind")
    try:
        if kind != "Secret":
            found = kube.custom_resource(CONNECTIONS, namespace, name or DEFAULT_CONNECTION)
            if found is not None:
                return _connection_settings(kube, namespace, found)
            if kind == "ControlPlaneConnection":
                return Missing("ConnectionNotFound", f"ControlPlaneConnection {name} not found")
        data = kube.secret_data(namespace, name) if name else None
    except KubeError as exc:
        return Missing("ConnectionUnreadable", str(exc))
    if name:
        if data is None:
            what = "connection Secret" if kind == "Secret" else "ControlPlaneConnection or Secret"
            return Missing("ConnectionNotFound", f"no {what} named {name}")
        if not data.get("url"):
            return Missing("ConnectionInvalid", f"connection Secret {name} has no key url")
        return ConnectionSettings(data["url"], data.get("apiKey"), data.get("tenantId"))
    if not connection.has_url():  # the tree still shows the Kubernetes side
        return Missing("NoConnection", "no control-plane URL: pass --url or use a context")
    return connection.current_settings()  # exits 2 on a bad context or no key


def _connection_settings(
    kube: KubeAccess, namespace: str, found: Mapping[str, Any]
) -> ConnectionSettings | Missing:
    """A ControlPlaneConnection's URL, tenant and the API key its Secret holds."""
    name = (found.get("metadata") or {}).get("name")
    spec = found.get("spec") or {}
    key_ref = spec.get("apiKeySecretRef") or {}
    api_key = None
    if key_ref:
        data = kube.secret_data(namespace, key_ref.get("name", ""))
        api_key = (data or {}).get(key_ref.get("key", ""))
        if not api_key:
            return Missing(
                "ConnectionInvalid",
                f"ControlPlaneConnection {name}: no key {key_ref.get('key')} in Secret "
                f"{key_ref.get('name')}",
            )
    return ConnectionSettings(spec.get("url", ""), api_key, spec.get("tenantId"))


def _control_plane(
    settings: ConnectionSettings, action: Callable[[ControlPlaneClient], Awaitable[T]]
) -> T:
    async def main() -> T:
        async with connection.make_client(settings) as client:
            return await action(client)

    return asyncio.run(main())


def _trace_agentdeployment(kube: KubeAccess, namespace: str, obj: Mapping[str, Any]) -> Node:
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    deployment_id = status.get("deploymentId") or spec.get("deploymentId")
    listener_ref = ((spec.get("sourceConfig") or {}).get("listenerRef") or {}).get("name")
    listener_cr = None
    if listener_ref:
        try:
            listener_cr = kube.custom_resource("listeners", namespace, listener_ref)
        except KubeError:
            listener_cr = None
    if not deployment_id:
        missing = Missing("NoId", "the operator has not created or found it yet")
        return tracetree.build_agentdeployment(obj, missing, {}, None, None, missing)
    settings = _settings(kube, namespace, obj)
    if isinstance(settings, Missing):
        return tracetree.build_agentdeployment(obj, settings, {}, None, None, settings)
    chain = _control_plane(
        settings, lambda c: tracereaders.read_deployment_chain(c, str(deployment_id))
    )
    workloads: Workloads | Missing = Missing("NoListener")
    if not isinstance(chain.deployment, Missing) and isinstance(chain.listener, Listener):
        try:
            where = namespace_for(chain.deployment, chain.listener)
        except RenderError as exc:
            workloads = Missing("NoNamespace", str(exc))
        else:
            selector = tracereaders.deployment_selector(str(deployment_id))
            workloads = tracereaders.read_workloads(kube, where, selector)
    return tracetree.build_agentdeployment(
        obj, chain.deployment, chain.revisions, chain.listener, listener_cr, workloads
    )


def _trace_listener(kube: KubeAccess, namespace: str, obj: Mapping[str, Any]) -> Node:
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    listener_id = status.get("listenerId") or spec.get("listenerId")
    if not listener_id:
        missing = Missing("NoId", "the operator has not created or found it yet")
        return tracetree.build_listener(obj, missing, missing)
    settings = _settings(kube, namespace, obj)
    if isinstance(settings, Missing):
        return tracetree.build_listener(obj, settings, settings)
    listener = _control_plane(settings, lambda c: tracereaders.read_listener(c, str(listener_id)))
    if isinstance(listener, Missing):
        return tracetree.build_listener(obj, listener, listener)
    config = listener.compute_config
    namespaces = (config.k8s_namespaces if config else None) or []
    selector = tracereaders.listener_selector(str(listener_id))
    workloads = [tracereaders.read_workloads(kube, ns, selector) for ns in namespaces]
    return tracetree.build_listener(obj, listener, workloads)


def trace(
    reference: Annotated[
        str, typer.Argument(help="agentdeployment/NAME or listener/NAME (or agd, dpl...).")
    ],
    name: Annotated[str | None, typer.Argument(help="NAME, when KIND is given alone.")] = None,
    namespace: Annotated[
        str | None,
        typer.Option("--namespace", "-n", help="Namespace (default: the kube context's)."),
    ] = None,
    kubeconfig: Annotated[
        str | None,
        typer.Option(
            "--kubeconfig", help="Kubeconfig file (default: $KUBECONFIG, ~/.kube/config)."
        ),
    ] = None,
    kube_context: Annotated[
        str | None, typer.Option("--kube-context", help="Kubeconfig context (default: current).")
    ] = None,
    output_format: Annotated[
        TraceOutput,
        typer.Option(
            "--output", "-o", help="table, wide (every column), json or yaml.", case_sensitive=False
        ),
    ] = TraceOutput.table,
) -> None:
    """Show a resource and what it leads to: the control-plane deployment, its latest and
    active revisions, its listener and the workloads in the listener's cluster. Reads
    only. A missing piece is a line with its reason; exit 1 only when the resource itself
    cannot be read."""
    try:
        kind, resource_name = parse_reference(reference, name)
    except ValueError as exc:
        connection.fail(str(exc), connection.ExitCode.USAGE)
    output = Output(output_format.value)
    try:
        kube = KubeAccess.load(kubeconfig, kube_context)
        namespace = namespace or kube.namespace
        plural = KINDS[kind].plural
        obj = kube.custom_resource(plural, namespace, resource_name)
    except KubeError as exc:
        connection.fail(str(exc), connection.ExitCode.API_ERROR)
    if obj is None:
        connection.fail(
            f"{KINDS[kind].singular} {resource_name} not found in namespace {namespace}",
            connection.ExitCode.API_ERROR,
        )
    build = _trace_agentdeployment if kind == "AgentDeployment" else _trace_listener
    try:
        tree = build(kube, namespace, obj)
    except typer.Exit:
        raise
    except Exception as exc:  # the one-line promise holds even for a bug of ours
        connection.fail(f"unexpected {type(exc).__name__}: {exc}", connection.ExitCode.API_ERROR)
    if output in (Output.json, Output.yaml):
        typer.echo(dump_text(tracetree.to_data(tree), output))
        return
    print_table(tracetree.COLUMNS, tracetree.rows(tree, tables.now()), output)
