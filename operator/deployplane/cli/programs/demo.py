"""`deployplane demo up|down|status`: the whole system on one machine,
`deployplane.demo.commands`."""

from __future__ import annotations

from deployplane.cli.helptext import Group
from deployplane.cli.params import option

__all__ = ["demo"]

demo = Group(name="demo", help="The local demo: cluster, emulator, operator.", no_args_is_help=True)


@demo.command("up")
@option(
    "--timeout",
    type=float,
    default=300.0,
    help="Seconds to wait for every example to be Ready.",
)
@option(
    "--real-node",
    is_flag=True,
    help="On a real node (root; `make images` first): the operator and listener agent as "
    "pods of the built image, the emulator on the host building real images, the "
    "workloads as real containers.",
)
@option(
    "--gitops",
    is_flag=True,
    help="Sync the example AgentDeployments through Argo CD from the cluster's git server.",
)
def up(timeout: float, real_node: bool, gitops: bool) -> None:
    """Start everything, apply examples/, show them until Ready."""
    from deployplane.demo import commands

    commands.up(timeout=timeout, real_node=real_node, gitops=gitops)


@demo.command("down")
def down() -> None:
    """Stop the operator, the emulator and the cluster, and remove the demo's state."""
    from deployplane.demo import commands

    commands.down()


@demo.command("status")
def status() -> None:
    """Print the demo's resources as JSON (for scripts)."""
    from deployplane.demo import commands

    commands.status()
