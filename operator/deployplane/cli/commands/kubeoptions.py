"""The options of the commands that read a cluster as kubectl does (`approve`, `plan`,
`trace`, `export`): its kubeconfig and the context of it, which TAB completes from the
kubeconfig file."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

from deployplane.cli.params import option

__all__ = ["KUBECONFIG_HELP", "kube_context_option", "kube_contexts", "kubeconfig_option"]

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


def kubeconfig_option(help: str = KUBECONFIG_HELP) -> Callable[[F], F]:
    """`--kubeconfig FILE`."""
    return option("--kubeconfig", help=help)


kube_context_option = option(
    "--kube-context", help="Kubeconfig context (default: current).", shell_complete=kube_contexts
)
