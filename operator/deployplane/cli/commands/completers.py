"""What TAB offers for the values of the commands' parameters (click's `shell_complete=`):
the names of the control plane's resources (`deployplane.cli.tab.names`: how a TAB asks
for them) and of the config file's contexts, each importing what it reads only when a
TAB asks for it.
"""

from __future__ import annotations

from typing import Any, Final

import click
from click.core import ParameterSource

from deployplane.cli.clientconfig.options import ConnectionOptions

__all__ = [
    "connection_options",
    "context_names",
    "deployment_names",
    "listener_names",
    "revision_ids",
]

_OPTION_NAMES: Final = ("url", "api_key", "tenant_id", "context")


def connection_options(ctx: click.Context) -> ConnectionOptions:
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


def _offered(kind: str, ctx: click.Context, incomplete: str, ref: str | None) -> list[str]:
    from deployplane.cli.tab.names import offered

    return offered(kind, connection_options(ctx), incomplete, ref)


def deployment_names(ctx: click.Context, _: click.Parameter, incomplete: str) -> list[str]:
    """The names of the deployments that start with `incomplete`."""
    return _offered("deployments", ctx, incomplete, None)


def listener_names(ctx: click.Context, _: click.Parameter, incomplete: str) -> list[str]:
    """The `compute_id`s of the listeners that start with `incomplete`."""
    return _offered("listeners", ctx, incomplete, None)


def revision_ids(ctx: click.Context, _: click.Parameter, incomplete: str) -> list[str]:
    """The ids of the revisions of the deployment named before (by name or id)."""
    ref = ctx.params.get("ref")
    return _offered("revisions", ctx, incomplete, ref if isinstance(ref, str) else None)


def context_names(_: click.Context, __: click.Parameter, incomplete: str) -> list[str]:
    """The contexts of the config file that start with `incomplete` (none when the file
    cannot be read)."""
    from deployplane.cli.tab.names import context_names as names

    return names(incomplete)
