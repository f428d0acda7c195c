"""`deployplane`: the whole command line (`deployplane.cli` starts it).

Each command group lives beside the code it drives and is only registered here, so
this module stays a table of contents:

- API resources (`deployments`, `revisions`, `listeners`, `repos`, `providers`):
  `deployplane.cli.commands.resources`; `apply -f`: `deployplane.cli.commands.edit.apply`
- `export`: existing deployments and listeners as custom resources to adopt:
  `deployplane.cli.commands.export`
- `trace KIND/NAME`: a resource's tree, Kubernetes to control plane to workloads:
  `deployplane.cli.commands.trace`
- `config get-contexts|use-context|set-context`: `deployplane.cli.commands.config`, over the
  configuration library `deployplane.cli.config`
- `version`, `--version`: `deployplane.cli.commands.about`
- `controlplane serve`: the emulator, `deployplane.controlplane.cli`
- `dev cluster up|down|kubeconfig`: the local Kubernetes API, `deployplane.devcluster.cli`
- `operator run`: the Kopf operator, `deployplane.controller.cli`
- `listener run`: the listener agent (data plane), `deployplane.dataplane.cli`
- `demo up|down|status`: everything at once, `deployplane.demo`
"""

from __future__ import annotations

from typing import Annotated

import typer

from deployplane.cli.commands import about, common, config, export, logs, resources, trace
from deployplane.cli.commands.connection import EXIT_CODES_HELP, ConnectedCommand
from deployplane.cli.commands.edit import apply as applying
from deployplane.controller.cli import app as operator_app
from deployplane.controlplane.cli import app as controlplane_app
from deployplane.dataplane.cli import app as listener_app
from deployplane.demo import app as demo_app
from deployplane.devcluster.cli import app as dev_app

app = typer.Typer(
    name="deployplane",
    help="Run agent-server deployments with GitOps.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)


@app.callback()
def main(
    version: Annotated[
        bool,
        typer.Option(
            "--version", is_eager=True, callback=about.print_version, help="Print the version."
        ),
    ] = False,
) -> None:
    """Run agent-server deployments with GitOps."""


resources.register(app)
logs.register(common.deployments)  # `deployplane deployments logs`
app.command("apply", cls=ConnectedCommand, epilog=EXIT_CODES_HELP)(applying.apply)
app.command("version", cls=ConnectedCommand, epilog=EXIT_CODES_HELP)(about.version)
app.command("export", cls=ConnectedCommand, epilog=EXIT_CODES_HELP)(export.export_command)
app.command("trace", cls=ConnectedCommand, epilog=EXIT_CODES_HELP)(trace.trace)
app.add_typer(config.app, name="config", help="Contexts: named connections to a control plane.")
app.add_typer(controlplane_app, name="controlplane", help="Run the control-plane emulator.")
app.add_typer(dev_app, name="dev", help="Local development cluster (kube-apiserver + etcd).")
app.add_typer(operator_app, name="operator", help="Run the deployplane operator.")
app.add_typer(listener_app, name="listener", help="Run a listener's agent (the data plane).")
app.add_typer(demo_app, name="demo", help="The local demo: cluster, emulator, operator.")
