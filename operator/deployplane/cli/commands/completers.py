"""The completers the commands' resource arguments name (`autocompletion=`): click's
way to a TAB's names, over `deployplane.cli.tab.names` (what the names are, and how a
TAB asks the control plane for them).

A TAB is answered without click where `deployplane.cli.tab` can (nearly always); it
reads in `BY_KIND` which argument offers which names, through the generated command
tree.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

import typer
from click.core import ParameterSource

from deployplane.cli.config.options import ConnectionOptions
from deployplane.cli.tab.names import offered

__all__ = ["BY_KIND", "connection_options", "deployment_names", "listener_names", "revision_ids"]

_OPTION_NAMES: Final = ("url", "api_key", "tenant_id", "context")


def connection_options(ctx: typer.Context) -> ConnectionOptions:
    """The connection options typed so far, as the command would read them: given after
    the command wins over given after its group; else the variables (click has read
    them into both)."""
    found: dict[str, str | None] = dict.fromkeys(_OPTION_NAMES)
    for typed in (True, False):
        current: Any = ctx
        while current is not None:
            for name in _OPTION_NAMES:
                value = current.params.get(name)
                given = current.get_parameter_source(name) is ParameterSource.COMMANDLINE
                if found[name] is None and isinstance(value, str) and given == typed:
                    found[name] = value
            current = current.parent
    return ConnectionOptions(**found)


def deployment_names(ctx: typer.Context, incomplete: str) -> list[str]:
    """The names of the deployments that start with `incomplete`."""
    return offered("deployments", connection_options(ctx), incomplete, None)


def listener_names(ctx: typer.Context, incomplete: str) -> list[str]:
    """The `compute_id`s of the listeners that start with `incomplete`."""
    return offered("listeners", connection_options(ctx), incomplete, None)


def revision_ids(ctx: typer.Context, incomplete: str) -> list[str]:
    """The ids of the revisions of the deployment named before (by name or id)."""
    ref = ctx.params.get("ref")
    return offered(
        "revisions", connection_options(ctx), incomplete, ref if isinstance(ref, str) else None
    )


BY_KIND: Final[dict[str, Callable[[typer.Context, str], list[str]]]] = {
    "deployments": deployment_names,
    "listeners": listener_names,
    "revisions": revision_ids,
}
"""The completer of each kind of `deployplane.cli.tab.names.KINDS`."""
