"""A command group that loads its commands when they are used.

The group holds, for each command, its name, one line of help and where its Typer app
lives (`module:attribute`), and imports that module only when the command is run, asked
for its own `--help` or completed into. So `deployplane --version`, `deployplane --help`
and a TAB after `deployplane ` import none of the commands, and `deployplane operator
run` imports the operator's group alone. Every loaded group prints plain help (click's
format: wrapped at word boundaries, at most 80 columns, no placeholder for a flag).
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from difflib import get_close_matches
from typing import Any, ClassVar

import click
import typer
from click.shell_completion import CompletionItem
from typer.core import TyperGroup

from deployplane.cli.helptext import HelpContext, plain_tree

__all__ = ["Entry", "LazyGroup", "load"]


@dataclass(frozen=True)
class Entry:
    """A command of a lazy group."""

    name: str
    target: str
    """`module:attribute` of its `typer.Typer`, followed by the names leading to a
    command inside it (`deployplane.devcluster.cli:app cluster up`); none for a group
    listed by `commands`."""
    help: str
    """The one line the group's listing shows (and the command's help when it has none)."""
    group: bool = True
    """A group of commands (`deployplane deployments ...`); else the app's one command
    (`deployplane apply`), or the command the target names."""
    commands: tuple[Entry, ...] = ()
    """A group's commands when they are listed here too: its `--help` and a TAB read
    them, and its module is imported only to run (or show the help of) one of them."""


def load(entry: Entry) -> Any:
    """The click command of `entry`, imported now (a listed group: imported later)."""
    if entry.commands:
        command: Any = LazyGroup.of(entry.commands)(
            name=entry.name, help=entry.help, no_args_is_help=True, rich_markup_mode=None
        )
    else:
        command = _imported(entry)
    command.name = entry.name
    command.short_help = entry.help
    if not command.help:
        command.help = entry.help
    plain_tree(command)
    return command


def _imported(entry: Entry) -> Any:
    spec, *path = entry.target.split()
    module_name, _, attribute = spec.partition(":")
    app = getattr(importlib.import_module(module_name), attribute)
    if not isinstance(app, typer.Typer):
        raise TypeError(f"{spec} is not a typer.Typer")
    if not entry.group and not path:
        return typer.main.get_command(app)
    # Mounted as `add_typer` mounts a group: a group even with one command (`operator
    # run`), without the completion options typer gives a root app, with plain help
    # whatever markup its module asked for.
    mount = typer.Typer(add_completion=False, rich_markup_mode=None)
    mount.add_typer(app, name=entry.name)
    command: Any = typer.main.get_group(mount).commands[entry.name]
    for name in path:
        command = command.commands[name]
    return command


class LazyGroup(TyperGroup):
    """A `TyperGroup` whose commands are `ENTRIES`, loaded on first use."""

    ENTRIES: ClassVar[Sequence[Entry]] = ()
    context_class = HelpContext

    @classmethod
    def of(cls, entries: Sequence[Entry]) -> type[LazyGroup]:
        """The group class of these commands (typer makes the group from its class)."""
        return type("LazyGroup", (cls,), {"ENTRIES": tuple(entries)})

    @property
    def entries(self) -> Mapping[str, Entry]:
        return {entry.name: entry for entry in self.ENTRIES}

    def list_commands(self, ctx: Any) -> list[str]:
        return [entry.name for entry in self.ENTRIES] + [
            name for name in self.commands if name not in self.entries
        ]

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        if cmd_name not in self.commands and cmd_name in self.entries:
            self.commands[cmd_name] = load(self.entries[cmd_name])
        return self.commands.get(cmd_name)

    def format_commands(self, ctx: Any, formatter: Any) -> None:
        """The listing of `--help`, from the entries: nothing is imported."""
        rows = [(entry.name, entry.help) for entry in self.ENTRIES]
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)

    def shell_complete(self, ctx: click.Context, incomplete: str) -> list[CompletionItem]:
        """The commands starting with `incomplete`, from the entries (nothing imported;
        TyperGroup's own would load each command for its help line), then the group's
        own options."""
        found = [
            CompletionItem(entry.name, help=entry.help)
            for entry in self.ENTRIES
            if entry.name.startswith(incomplete)
        ]
        # The options, as any command offers them (click.Group's would load the commands).
        return found + click.Command.shell_complete(self, ctx, incomplete)

    def resolve_command(self, ctx: Any, args: list[str]) -> Any:
        name = args[0] if args else ""
        known = name in self.commands or name in self.entries
        if name and not known and not ctx.resilient_parsing and not name.startswith("-"):
            # As click says it, with the suggestions taken from every name, loaded or not.
            matches = get_close_matches(name, self.list_commands(ctx))
            hint = f" Did you mean {', '.join(map(repr, matches))}?" if matches else ""
            ctx.fail(f"No such command {name!r}.{hint}")
        return super().resolve_command(ctx, args)
