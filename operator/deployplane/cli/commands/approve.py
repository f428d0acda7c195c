"""`deployplane approve NAME [-n NS]`: approve the change an AgentDeployment with
`updatePolicy: Manual` holds (its `status.pendingChange`).

An approval is the annotation `deployplane.io/approved-generation` naming the generation
the change belongs to (`deployplane.reconcile.approval`): recorded on the resource, and
the same as `kubectl annotate agd NAME deployplane.io/approved-generation=N --overwrite`.
This command approves exactly what the status shows: nothing when nothing waits, and
not while the operator has yet to plan a newer edit (the change shown would not be the
one approved). The annotation is written under the resourceVersion read, so an edit in
between refuses it rather than approve what nobody saw.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import click

from deployplane.cli.commands import connection
from deployplane.cli.commands.kubeoptions import (
    kube_context_option,
    kubeconfig_option,
    namespace_option,
)
from deployplane.cli.helptext import Command
from deployplane.cli.params import argument

if TYPE_CHECKING:
    from deployplane.reconcile.approval import PendingChange

__all__ = ["ApprovalError", "approve", "approved_generation"]

PLURAL = "agentdeployments"
EXIT_CODES = "Exit codes: 0 approved; 1 nothing to approve, or an error; 2 usage error."


class ApprovalError(Exception):
    """Nothing this command may approve: one line saying why."""


def approved_generation(obj: Mapping[str, Any]) -> tuple[int, PendingChange]:
    """The generation to approve and its change, from the live object; else why not."""
    from deployplane.reconcile.approval import PendingChange

    meta, spec = obj.get("metadata") or {}, obj.get("spec") or {}
    name, generation = meta.get("name"), int(meta.get("generation") or 0)
    raw = (obj.get("status") or {}).get("pendingChange")
    if not raw:
        if spec.get("updatePolicy") != "Manual":
            raise ApprovalError(
                f"agentdeployment {name} has updatePolicy Automatic: its changes need no approval"
            )
        raise ApprovalError(f"agentdeployment {name} has no change waiting for approval")
    pending = PendingChange.model_validate(raw)
    if pending.generation != generation:
        raise ApprovalError(
            f"agentdeployment {name} is at generation {generation} and its pending change is "
            f"generation {pending.generation}'s: the operator has not planned the newest "
            "edit yet; run again in a moment"
        )
    return generation, pending


def _describe(change: PendingChange) -> str:
    what = change.action
    if change.reasons:
        what += f" ({', '.join(change.reasons)})"
    if change.fields:
        what += f" of {', '.join(change.fields)}"
    return what


@click.command("approve", cls=Command, epilog=EXIT_CODES)
@argument("name", metavar="NAME", help="The AgentDeployment.")
@namespace_option("Namespace (default: the kube context's).")
@kubeconfig_option()
@kube_context_option
def approve(
    name: str, namespace: str | None, kubeconfig: str | None, kube_context: str | None
) -> None:
    """Approve the change an AgentDeployment (updatePolicy Manual) holds.

    Annotates it deployplane.io/approved-generation with the generation of its
    status.pendingChange; the operator then sends the change."""
    click.echo(run(name, namespace, kubeconfig, kube_context))


def run(name: str, namespace: str | None, kubeconfig: str | None, context: str | None) -> str:
    """Read the resource, check what waits, annotate it; the line to print."""
    from kubernetes import client
    from kubernetes.client.exceptions import ApiException

    from deployplane.cli.commands.kube import TIMEOUT, KubeAccess, KubeError
    from deployplane.kube.paths import GROUP, VERSION
    from deployplane.reconcile.approval import APPROVED_GENERATION_ANNOTATION

    api = connection.ExitCode.API_ERROR
    try:
        kube = KubeAccess.load(kubeconfig, context)
        where = namespace or kube.namespace
        obj = kube.custom_resource(PLURAL, where, name)
    except KubeError as exc:
        connection.fail(str(exc), api)
    if obj is None:
        connection.fail(f"agentdeployment {name} not found in namespace {where}", api)
    try:
        generation, change = approved_generation(obj)
    except ApprovalError as exc:
        connection.fail(str(exc), api)
    patch = {
        "metadata": {
            "resourceVersion": (obj.get("metadata") or {}).get("resourceVersion"),
            "annotations": {APPROVED_GENERATION_ANNOTATION: str(generation)},
        }
    }
    custom = client.CustomObjectsApi(kube.api)
    try:
        custom.patch_namespaced_custom_object(
            GROUP,
            VERSION,
            where,
            PLURAL,
            name,
            patch,
            _content_type="application/merge-patch+json",
            _request_timeout=TIMEOUT,
        )
    except ApiException as exc:
        if exc.status == 409:
            connection.fail(f"agentdeployment {name} changed while approving: run again", api)
        connection.fail(f"annotate agentdeployment {name}: {exc.status} {exc.reason}", api)
    except Exception as exc:  # urllib3's connection errors, TLS: one line
        connection.fail(f"annotate agentdeployment {name}: {type(exc).__name__}: {exc}", api)
    return f"agentdeployment/{name} approved: generation {generation}, {_describe(change)}"
