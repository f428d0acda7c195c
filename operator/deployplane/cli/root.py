"""`deployplane`: the command line's table of contents.

The root knows each top-level command's name and where it is declared, and imports a
declaration when the command is used (`deployplane.cli.lazy`). A declaration is click's
(`deployplane.cli.params`): the commands, their options and arguments, their help and
their completers, in a module that imports nothing heavy; each command imports what it
runs when it runs (the client, the models, the Kubernetes client, rich). So `--help`
costs the interpreter and click, a TAB (the hidden `__complete`,
`deployplane.cli.tab.complete`) the same and what the words lead to, and `operator run`
loads the operator alone (`--version` is answered before the root is imported:
`deployplane.cli`).

- API resources (`deployments`, `revisions`, `listeners`, `repos`, `providers`), one
  module each in `deployplane.cli.commands`; `apply -f`: `commands.edit.apply`
- `plan -f PATH`: what applying manifests would do, `commands.plan`; `approve NAME`:
  send the change a Manual AgentDeployment holds, `commands.approve`
- `export`: existing deployments and listeners as custom resources to adopt
- `trace KIND/NAME`: a resource's tree, Kubernetes to control plane to workloads
- `config get-contexts|use-context|set-context`, over `deployplane.cli.clientconfig`
- `version`, `--version`; `completion bash|zsh|fish|powershell`
- the programs, in `deployplane.cli.programs`: `controlplane serve` (the emulator),
  `dev cluster up|down|...` (the local Kubernetes API), `operator run` (the Kopf
  operator), `listener run` (a listener's agent, the data plane), `demo up|down|status`
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

import click

from deployplane import __version__
from deployplane.cli.lazy import LazyGroup

__all__ = ["COMMANDS", "PROG", "root", "run"]

PROG: Final = "deployplane"

_COMMANDS: Final = "deployplane.cli.commands"
_PROGRAMS: Final = "deployplane.cli.programs"
COMMANDS: Final = {
    "deployments": f"{_COMMANDS}.deployments:deployments",
    "revisions": f"{_COMMANDS}.revisions:revisions",
    "listeners": f"{_COMMANDS}.listeners:listeners",
    "repos": f"{_COMMANDS}.lookups:repos",
    "providers": f"{_COMMANDS}.lookups:providers",
    "apply": f"{_COMMANDS}.edit.apply:apply",
    "plan": f"{_COMMANDS}.plan.command:plan",
    "approve": f"{_COMMANDS}.approve:approve",
    "export": f"{_COMMANDS}.export.command:export",
    "trace": f"{_COMMANDS}.trace.command:trace",
    "config": f"{_COMMANDS}.config:config",
    "version": f"{_COMMANDS}.about:version",
    "completion": f"{_COMMANDS}.completion:completion",
    "controlplane": f"{_PROGRAMS}.emulator:controlplane",
    "dev": f"{_PROGRAMS}.devcluster:dev",
    "operator": f"{_PROGRAMS}.operator:operator",
    "listener": f"{_PROGRAMS}.agent:listener",
    "demo": f"{_PROGRAMS}.demo:demo",
    # hidden: what the completion scripts call (cobra's names, as kubectl's and gh's)
    "__complete": "deployplane.cli.tab.complete:complete",
    "__completeNoDesc": "deployplane.cli.tab.complete:complete_no_descriptions",
}
"""Each top-level command: where it is declared (`module:attribute`)."""


def _print_version(ctx: click.Context, _: click.Parameter, value: bool) -> None:
    if value and not ctx.resilient_parsing:  # not while completing a TAB
        click.echo(f"{PROG} {__version__}")
        ctx.exit()


root = LazyGroup(
    targets=COMMANDS,
    name=PROG,
    help="Run agent-server deployments with GitOps.",
    no_args_is_help=True,
    params=[
        click.Option(
            ["--version"],
            is_flag=True,
            is_eager=True,
            expose_value=False,
            callback=_print_version,
            help="Print the version.",
        )
    ],
)


def run(argv: Sequence[str]) -> None:
    """Run the command line on `argv`."""
    root.main(list(argv), prog_name=PROG)
