"""The options of the commands that read a cluster as kubectl does (`approve`, `plan`,
`trace`, `export`, `deployments port-forward`): its kubeconfig, the context of it
(which TAB completes from the kubeconfig file) and the namespace (which TAB completes
with kubectl's own answer: the cluster's namespaces, kubectl handling its credentials)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

from deployplane.cli.params import option

__all__ = [
    "KUBECONFIG_HELP",
    "kube_context_option",
    "kube_contexts",
    "kube_namespaces",
    "kubeconfig_option",
    "namespace_option",
]

F = TypeVar("F", bound=Callable[..., Any])

KUBECONFIG_HELP = "Kubeconfig file (default: $KUBECONFIG, ~/.kube/config)."


def kube_contexts(ctx: click.Context, _: click.Parameter, incomplete: str) -> list[str]:
    """The contexts of the kubeconfig (`--kubeconfig` typed so far, else $KUBECONFIG's
    first file, else ~/.kube/config) that start with `incomplete`; none when it cannot
    be read."""
    import os

    try:
        import yaml

        given = ctx.params.get("kubeconfig")
        path = given or (os.environ.get("KUBECONFIG") or "").split(os.pathsep)[0]
        path = os.path.expanduser(path or "~/.kube/config")
        with open(path, encoding="utf-8") as file:
            contexts = (yaml.safe_load(file) or {}).get("contexts") or []
        names = [c.get("name") for c in contexts if isinstance(c, dict)]
        return sorted({n for n in names if isinstance(n, str) and n.startswith(incomplete)})
    except Exception:
        return []


def kube_namespaces(ctx: click.Context, _: click.Parameter, incomplete: str) -> list[str]:
    """The namespaces of the cluster that start with `incomplete`: `kubectl get
    namespaces` with the `--kubeconfig` and `--kube-context` typed so far (kubectl from
    $DEPLOYPLANE_TOOLS_BIN, else PATH); none when kubectl is missing, fails or takes
    more than 2 seconds."""
    import os
    import shutil
    import subprocess

    tools = os.environ.get("DEPLOYPLANE_TOOLS_BIN")
    kubectl = os.path.join(tools, "kubectl") if tools else shutil.which("kubectl")
    if not kubectl:
        return []
    argv = [kubectl, "get", "namespaces", "-o", "name", "--request-timeout=2s"]
    for param, flag in (("kubeconfig", "--kubeconfig"), ("kube_context", "--context")):
        given = ctx.params.get(param)
        if isinstance(given, str) and given:
            argv += [flag, given]
    try:
        done = subprocess.run(
            argv, capture_output=True, text=True, timeout=3, stdin=subprocess.DEVNULL
        )
    except (OSError, subprocess.SubprocessError):
        return []
    if done.returncode != 0:
        return []
    names = [line.strip().removeprefix("namespace/") for line in done.stdout.splitlines()]
    return sorted({name for name in names if name and name.startswith(incomplete)})


def namespace_option(help: str) -> Callable[[F], F]:
    """`-n/--namespace NAME`, completed with the cluster's namespaces."""
    return option("--namespace", "-n", help=help, shell_complete=kube_namespaces)


def kubeconfig_option(help: str = KUBECONFIG_HELP) -> Callable[[F], F]:
    """`--kubeconfig FILE`."""
    return option("--kubeconfig", help=help)


kube_context_option = option(
    "--kube-context", help="Kubeconfig context (default: current).", shell_complete=kube_contexts
)
