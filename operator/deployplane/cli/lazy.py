"""A command group that imports a command's module when the command is used.

The group holds, for each command, its name and where it is declared
(`module:attribute`). A declaration's module imports click and what declaring takes
(its commands run what they run by importing it then), so loading one costs little;
the group still loads only what a call needs: `deployplane deployments list` and a TAB
after `deployplane deployments get ` load the `deployments` group alone, `--help` and a
TAB after `deployplane ` every top-level one (their help lines are theirs: written once,
with the command).
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from difflib import get_close_matches
from typing import Any

import click

from deployplane.cli.helptext import Group

__all__ = ["LazyGroup", "load"]


def load(target: str) -> click.Command:
    """The command declared at `module:attribute`."""
    module_name, _, attribute = target.partition(":")
    command = getattr(importlib.import_module(module_name), attribute)
    if not isinstance(command, click.Command):
        raise TypeError(f"{target} is not a click command")
    return command


class LazyGroup(Group):
    """A `Group` whose commands are `targets` (name -> `module:attribute`), imported on
    first use, besides the ones added to it."""

    def __init__(self, *, targets: Mapping[str, str], **attrs: Any) -> None:
        super().__init__(**attrs)
        self.targets = dict(targets)

    def list_commands(self, ctx: click.Context) -> list[str]:
        return [*self.targets, *(name for name in self.commands if name not in self.targets)]

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in self.targets:
            self.commands[cmd_name] = load(self.targets[cmd_name])
        return self.commands.get(cmd_name)

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        name = args[0] if args else ""
        known = name in self.commands or name in self.targets
        if name and not known and not ctx.resilient_parsing and not name.startswith("-"):
            # As click says it, with the names that come close (from the table: nothing
            # is imported to say so).
            matches = get_close_matches(name, self.list_commands(ctx))
            hint = f" Did you mean {', '.join(map(repr, matches))}?" if matches else ""
            ctx.fail(f"No such command {name!r}.{hint}")
        return super().resolve_command(ctx, args)
