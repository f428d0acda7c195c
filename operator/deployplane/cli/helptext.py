"""How every command prints its help: click's plain format, at most 80 columns, lines
broken at spaces only, the arguments listed with their help before the options (as
`gh` and `kubectl` list what a command takes).

A command's help is written once, with the command: its first paragraph is its summary,
the line a listing of commands (its group's `--help`, `deployplane --help`) and a TAB's
description show, whole (click's own would cut it at a width).

Click wraps with Python's `textwrap`, which also breaks a line after a hyphen: `config
get-contexts` or `--name-contains` cut in two. The formatter hands it every hyphen as a
non-breaking one (U+2011, which `textwrap` does not split at) and gives the text back
with plain hyphens.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterable
from typing import Any, Final

import click

__all__ = ["Command", "Group", "HelpContext", "HelpFormatter", "format_params", "summary"]

_KEPT: Final = "\u2011"


def _kept(text: str) -> str:
    return text.replace("-", _KEPT)


class HelpFormatter(click.HelpFormatter):
    """Click's help formatter, breaking lines at spaces only."""

    def write_usage(self, prog: str, args: str = "", prefix: str | None = None) -> None:
        super().write_usage(_kept(prog), _kept(args), prefix)

    def write_text(self, text: str) -> None:
        super().write_text(_kept(text))

    def write_dl(
        self, rows: Iterable[tuple[str, str]], col_max: int = 30, col_spacing: int = 2
    ) -> None:
        super().write_dl([(_kept(a), _kept(b)) for a, b in rows], col_max, col_spacing)

    def getvalue(self) -> str:
        return super().getvalue().replace(_KEPT, "-")


class HelpContext(click.Context):
    """The context of every command: its help through `HelpFormatter`."""

    formatter_class = HelpFormatter


def format_params(command: click.Command, ctx: click.Context, formatter: Any) -> None:
    """The `Arguments:` section (those with help), then the `Options:` section."""
    sections: dict[str, list[tuple[str, str]]] = {"argument": [], "option": []}
    for param in command.get_params(ctx):
        record = param.get_help_record(ctx)
        if record is not None and param.param_type_name in sections:
            sections[param.param_type_name].append(record)
    for kind, title in (("argument", "Arguments"), ("option", "Options")):
        if sections[kind]:
            with formatter.section(title):
                formatter.write_dl(sections[kind])


def summary(command: click.Command) -> str:
    """The first paragraph of the command's help, on one line."""
    text = inspect.cleandoc(command.short_help or command.help or "")
    return " ".join(text.split("\n\n", 1)[0].split())


class Command(click.Command):
    """A command of `deployplane`: plain help, its arguments listed."""

    context_class = HelpContext

    def get_short_help_str(self, limit: int = 0) -> str:
        return summary(self)

    def format_options(self, ctx: click.Context, formatter: Any) -> None:
        format_params(self, ctx, formatter)


class Group(click.Group):
    """A command group of `deployplane`: plain help; its commands are `Command`s and
    its groups `Group`s unless they say otherwise."""

    context_class = HelpContext
    command_class = Command
    group_class = type

    def get_short_help_str(self, limit: int = 0) -> str:
        return summary(self)

    def list_commands(self, ctx: click.Context) -> list[str]:
        """The commands in the order they were declared (click's own sorts them)."""
        return list(self.commands)

    def format_options(self, ctx: click.Context, formatter: Any) -> None:
        format_params(self, ctx, formatter)
        self.format_commands(ctx, formatter)
