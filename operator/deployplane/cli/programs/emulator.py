"""`deployplane controlplane serve`: the control-plane emulator,
`deployplane.emulator.serve`."""

from __future__ import annotations

import click

from deployplane.cli.helptext import Group
from deployplane.cli.params import option

__all__ = ["controlplane"]

DATABASE_URL = "sqlite+aiosqlite:///./.deployplane/controlplane.db"
"""`--database`'s default (`deployplane.emulator.settings.DEFAULT_DATABASE_URL`,
which a module this light cannot import)."""

controlplane = Group(
    name="controlplane", help="Run the control-plane emulator.", no_args_is_help=True
)


@controlplane.command("serve")
@option("--host", default="127.0.0.1", help="Address to listen on.")
@option("--port", type=int, default=8124, help="Port; 0 picks a free one.")
@option(
    "--database",
    default=DATABASE_URL,
    # From the environment too: a PostgreSQL URL holds a password, and the command line
    # is visible to every user of the machine (ps).
    envvar="DEPLOYPLANE_DATABASE_URL",
    help="SQLAlchemy async URL: sqlite+aiosqlite:///file or "
    "postgresql+asyncpg://user:password@host/db (see docs/emulator.md).",
)
@option(
    "--config",
    type=click.Path(dir_okay=False),
    help="YAML config (workspaces, pipeline, faults).",
)
@option(
    "--api-key",
    # From the environment too: the command line is visible to every user (ps).
    envvar="DEPLOYPLANE_EMULATOR_API_KEY",
    help="Without --config: the dev workspace's API key instead of the generated one "
    "(generated once per database). With --config: also accepted for the first workspace.",
)
@option(
    "--admin-key",
    envvar="DEPLOYPLANE_ADMIN_KEY",
    help="An extra admin key for /_emulator/* (sent as X-Admin-Key), besides the "
    "config's admin_api_keys.",
)
@option(
    "--strict",
    is_flag=True,
    help="Serve only the published contract: every emulator extension off (also the "
    "config key `strict: true`).",
)
@option(
    "--build-images",
    is_flag=True,
    help="Remote builds make real images (buildah, on the agent base of `make images`; "
    "also the config key `image_builds:`, docs/emulator.md); else they check the upload.",
)
@option(
    "--builtin-dataplane",
    metavar="NAMESPACE",
    envvar="DEPLOYPLANE_BUILTIN_DATAPLANE",
    help="Run the deployments that have no listener (cloud deployments, as `langgraph "
    "deploy` makes) into NAMESPACE of the cluster of $KUBECONFIG: a listener agent "
    "inside the emulator, one per workspace (docs/emulator.md).",
)
def serve(
    host: str,
    port: int,
    database: str,
    config: str | None,
    api_key: str | None,
    admin_key: str | None,
    strict: bool,
    build_images: bool,
    builtin_dataplane: str | None,
) -> None:
    """Run the control-plane emulator."""
    from pathlib import Path

    # The composition root: the emulator names what its built-in data plane needs, and
    # the listener agent's runner is handed to it here (neither program imports the other).
    from deployplane.dataplane.builtin import run_builtin_agents
    from deployplane.emulator.serve import serve_emulator

    serve_emulator(
        host=host,
        port=port,
        database=database,
        config=None if config is None else Path(config),
        api_key=api_key,
        admin_key=admin_key,
        strict=strict,
        build_images=build_images,
        builtin_dataplane=builtin_dataplane,
        builtin_runner=run_builtin_agents,
    )
