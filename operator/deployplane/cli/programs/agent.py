"""`deployplane listener run`: a listener's agent (the data plane),
`deployplane.dataplane.runagent`. Its settings are declared where the agent reads them
(`deployplane.dataplane.options.SETTINGS`): each an option here."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from deployplane.cli.helptext import Group
from deployplane.cli.params import option
from deployplane.dataplane import options as agent_options

__all__ = ["listener"]

listener = Group(
    name="listener", help="Run a listener's agent (the data plane).", no_args_is_help=True
)


def _settings(command: Callable[..., Any]) -> Callable[..., Any]:
    """Every setting of the agent as an option, `--<name>` and `DEPLOYPLANE_<NAME>`."""
    for setting in reversed(agent_options.SETTINGS):
        command = option(
            agent_options.option(setting.name),
            envvar=agent_options.variable(setting.name),
            metavar=setting.metavar,
            help=setting.help,
            show_default=False,
        )(command)
    return command


@listener.command("run")
@option("--listener-id", envvar="DEPLOYPLANE_LISTENER_ID", help="The listener's id.")
@option(
    "--listener",
    envvar="DEPLOYPLANE_LISTENER_NAME",
    help="Name of a Listener resource; its status.listenerId is used.",
)
@option(
    "--namespace",
    "-n",
    default="default",
    envvar="DEPLOYPLANE_LISTENER_NAMESPACE",
    help="Namespace of the Listener resource.",
)
@option("--verbose", "-v", is_flag=True, help="Debug logging.")
@option(
    "--liveness",
    metavar="URL",
    help="Serve liveness (is the agent stuck?) here, e.g. http://0.0.0.0:8080/healthz.",
)
@option(
    "--readiness",
    metavar="URL",
    help="Serve readiness (can it work now: running, Kubernetes API and control plane "
    "answer) here, e.g. http://0.0.0.0:8081/readyz.",
)
@_settings
def run(
    listener_id: str | None,
    listener: str | None,
    namespace: str,
    verbose: bool,
    liveness: str | None,
    readiness: str | None,
    **settings: str | None,
) -> None:
    """Run the agent of one listener: deploy its deployments on this cluster."""
    from deployplane.dataplane.runagent import run_agent

    run_agent(
        listener_id=listener_id,
        listener=listener,
        namespace=namespace,
        verbose=verbose,
        liveness=liveness,
        readiness=readiness,
        settings=settings,
    )
