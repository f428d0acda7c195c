"""`deployplane`: the command line's table of contents.

The root knows each command's name, its one line of help and where it lives, and
imports nothing of it (`deployplane.cli.lazy`): a command's module is imported when the
command runs, and each command imports what it needs (the client, the models, the
Kubernetes client, rich) when it runs. So `--help` costs the interpreter and typer,
and `operator run` loads the operator alone (`--version` and a TAB are answered before
the root is imported: `deployplane.cli`).

- API resources (`deployments`, `revisions`, `listeners`, `repos`, `providers`), one
  module each in `deployplane.cli.commands`; `apply -f`: `commands.edit.apply`
- `plan -f PATH`: what applying manifests would do, `commands.plan`; `approve NAME`:
  send the change a Manual AgentDeployment holds, `commands.approve`
- `export`: existing deployments and listeners as custom resources to adopt
- `trace KIND/NAME`: a resource's tree, Kubernetes to control plane to workloads
- `config get-contexts|use-context|set-context`, over `deployplane.cli.config`
- `version`, `--version`; `completion bash|zsh|fish|powershell`
- `controlplane serve`: the emulator, `deployplane.controlplane.serve`
- `dev cluster up|down|kubeconfig`: the local Kubernetes API, `deployplane.devcluster.cli`
- `operator run`: the Kopf operator, `deployplane.controller.run`
- `listener run`: the listener agent (data plane), `deployplane.dataplane.runagent`
- `demo up|down|status`: everything at once, `deployplane.demo.commands`
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
from collections.abc import Sequence
from typing import Annotated, Final

import typer

from deployplane import __version__
from deployplane.cli.lazy import Entry, LazyGroup
from deployplane.cli.tab import COMPLETE_VAR

__all__ = ["ENTRIES", "PROG", "app", "run"]

PROG: Final = "deployplane"

_COMMANDS: Final = "deployplane.cli.commands"
ENTRIES: Final = (
    Entry(
        "deployments",
        f"{_COMMANDS}.deployments:app",
        "Create, change, delete and wait for deployments.",
    ),
    Entry("revisions", f"{_COMMANDS}.revisions:app", "Inspect the revisions of a deployment."),
    Entry("listeners", f"{_COMMANDS}.listeners:app", "Manage listeners (compute infrastructure)."),
    Entry("repos", f"{_COMMANDS}.lookups:repos", "List git-host repositories of an integration."),
    Entry("providers", f"{_COMMANDS}.lookups:providers", "Look up OAuth providers."),
    Entry(
        "apply",
        f"{_COMMANDS}.edit.apply:app",
        "Create or update the resources of a file by their names.",
        group=False,
    ),
    Entry(
        "plan",
        f"{_COMMANDS}.plan.command:app",
        "Show what applying manifests would do to the control plane.",
        group=False,
    ),
    Entry(
        "approve",
        f"{_COMMANDS}.approve:app",
        "Approve the change an AgentDeployment (updatePolicy Manual) holds.",
        group=False,
    ),
    Entry(
        "export",
        f"{_COMMANDS}.export.command:app",
        "Write existing deployments and listeners as custom resources.",
        group=False,
    ),
    Entry(
        "trace",
        f"{_COMMANDS}.trace.command:app",
        "Show a resource and everything it leads to, as a tree.",
        group=False,
    ),
    Entry("config", f"{_COMMANDS}.config:app", "Contexts: named connections to a control plane."),
    Entry(
        "version",
        f"{_COMMANDS}.about:app",
        "Print the CLI's version and whether the control plane is reachable.",
        group=False,
    ),
    Entry(
        "completion",
        f"{_COMMANDS}.completion:app",
        "Print the completion script of a shell (bash, zsh, fish, powershell).",
        group=False,
    ),
    # The servers, the dev cluster and the demo, with their commands: their modules
    # import what they run at import time, so a group's --help is read from here.
    Entry(
        "controlplane",
        "",
        "Run the control-plane emulator.",
        commands=(
            Entry(
                "serve",
                "deployplane.controlplane.serve:app serve",
                "Run the control-plane emulator.",
                group=False,
            ),
        ),
    ),
    Entry(
        "dev",
        "",
        "Local development cluster (kube-apiserver + etcd).",
        commands=(
            Entry(
                "cluster",
                "",
                "Start, stop and locate the dev cluster.",
                commands=tuple(
                    Entry(name, f"deployplane.devcluster.cli:app cluster {name}", text, False)
                    for name, text in (
                        ("up", "Start the cluster in the background; return once ready."),
                        ("down", "Stop the cluster and remove its state."),
                        ("load-image", "Import image archives into the real node."),
                        ("kubeconfig", "Print the admin kubeconfig path."),
                        ("status", "Say whether the cluster runs and is ready."),
                    )
                ),
            ),
        ),
    ),
    Entry(
        "operator",
        "",
        "Run the deployplane operator.",
        commands=(
            Entry(
                "run",
                "deployplane.controller.run:app run",
                "Reconcile AgentDeployment and Listener resources.",
                group=False,
            ),
        ),
    ),
    Entry(
        "listener",
        "",
        "Run a listener's agent (the data plane).",
        commands=(
            Entry(
                "run",
                "deployplane.dataplane.runagent:app run",
                "Run the agent of one listener.",
                group=False,
            ),
        ),
    ),
    Entry(
        "demo",
        "",
        "The local demo: cluster, emulator, operator.",
        commands=tuple(
            Entry(name, f"deployplane.demo.commands:app {name}", text, group=False)
            for name, text in (
                ("up", "Start everything, apply examples/, show them until Ready."),
                ("down", "Stop the operator, the emulator and the cluster."),
                ("status", "Print the demo's resources as JSON (for scripts)."),
            )
        ),
    ),
)


def _print_version(ctx: typer.Context, value: bool) -> None:
    if value and not ctx.resilient_parsing:  # not while completing a TAB
        typer.echo(f"{PROG} {__version__}")
        raise typer.Exit()


app = typer.Typer(
    name=PROG,
    cls=LazyGroup.of(ENTRIES),
    help="Run agent-server deployments with GitOps.",
    no_args_is_help=True,
    rich_markup_mode=None,
    add_completion=False,
    pretty_exceptions_enable=False,
)


@app.callback()
def main(
    version: Annotated[
        bool,
        typer.Option(
            "--version", is_eager=True, callback=_print_version, help="Print the version."
        ),
    ] = False,
) -> None:
    """Run agent-server deployments with GitOps."""


def run(argv: Sequence[str] | None = None) -> None:
    """Run the command line on `argv` (default: the process's arguments)."""
    args = list(sys.argv[1:] if argv is None else argv)
    root = typer.main.get_group(app)
    if not os.environ.get(COMPLETE_VAR):
        root.main(args, prog_name=PROG)
        return
    # Answering a TAB that `deployplane.cli.tab` left to click: whatever goes wrong,
    # nothing reaches the terminal (stderr is the user's screen) and the shell gets no
    # answer rather than an error.
    typer.completion.get_completion_inspect_parameters()  # typer's shells, registered
    with contextlib.redirect_stderr(io.StringIO()):
        try:
            root.main(args, prog_name=PROG)
        except SystemExit:
            raise
        except Exception:
            sys.exit(0)
