"""The parameters every command declares, on click's own: an argument with a line of
help (click's have none), an option showing its default and its environment variable,
and a choice of an enum's values that hands the command the enum's member.

    @group.command("list")
    @option("--status", type=EnumChoice(DeploymentStatus), help="Only in this status.")
    @argument("ref", metavar="DEPLOYMENT", help="...", shell_complete=deployment_names)
    def list_(status: DeploymentStatus | None, ref: str) -> None: ...

The declarations are the command table a TAB is answered from
(`deployplane.cli.tab.complete`): a module declaring commands imports click and these,
and what its commands run is imported when they run.
"""

from __future__ import annotations

from collections.abc import Callable
from enum import Enum
from typing import Any, Generic, TypeVar

import click

__all__ = ["Argument", "Completer", "EnumChoice", "Option", "argument", "has_completer", "option"]

E = TypeVar("E", bound=Enum)
F = TypeVar("F", bound=Callable[..., Any])

Completer = Callable[[click.Context, click.Parameter, str], list[str]]
"""What TAB offers for a parameter's value: (context, parameter, word so far) -> values."""


def has_completer(param: click.Parameter) -> bool:
    """Whether `param` was declared with values of its own to offer (`shell_complete=`)."""
    return bool(getattr(param, "has_completer", False))


class Argument(click.Argument):
    """An argument with a line of help, listed under `Arguments:` in `--help`."""

    def __init__(
        self,
        param_decls: list[str],
        help: str | None = None,
        shell_complete: Completer | None = None,
        **attrs: Any,
    ) -> None:
        super().__init__(param_decls, shell_complete=shell_complete, **attrs)
        self.help = help
        self.shown_default = attrs.get("default")
        self.has_completer = shell_complete is not None

    def make_metavar(self, ctx: click.Context) -> str:
        """Its metavar (else its name in capitals), in brackets when it may be left out."""
        name = self.metavar or (self.name or "").upper()
        if self.metavar is None and self.nargs != 1:
            name += "..."
        return name if self.required or name.startswith("[") else f"[{name}]"

    def get_help_record(self, ctx: click.Context) -> tuple[str, str] | None:
        extra = []
        default = self.shown_default
        if not self.required and default not in (None, (), []):
            shown = default.value if isinstance(default, Enum) else default
            extra.append(f"default: {shown}")
        if self.required:
            extra.append("required")
        text = self.help or ""
        if extra:
            text = f"{text}  [{'; '.join(extra)}]" if text else f"[{'; '.join(extra)}]"
        return self.make_metavar(ctx), text


class Option(click.Option):
    """An option whose `--help` shows its default and names its environment variable,
    if it has them."""

    def __init__(
        self,
        param_decls: list[str],
        show_default: bool = True,
        show_envvar: bool = True,
        shell_complete: Completer | None = None,
        **attrs: Any,
    ) -> None:
        super().__init__(
            param_decls,
            show_default=show_default,
            show_envvar=show_envvar,
            shell_complete=shell_complete,
            **attrs,
        )
        self.has_completer = shell_complete is not None


class EnumChoice(click.Choice[str], Generic[E]):
    """One of the values of an enum (case-insensitive, as the values are lower case),
    handed to the command as the enum's member."""

    def __init__(self, enum: type[E], case_sensitive: bool = False) -> None:
        super().__init__([str(member.value) for member in enum], case_sensitive=case_sensitive)
        self.enum = enum

    def convert(  # type: ignore[override]  # the enum's member, not the choice's text
        self, value: Any, param: click.Parameter | None, ctx: click.Context | None
    ) -> E:
        if isinstance(value, self.enum):
            return value
        return self.enum(super().convert(value, param, ctx))


def argument(name: str, **attrs: Any) -> Callable[[F], F]:
    """`click.argument` with a help line (`help=`)."""
    decorator: Callable[[F], F] = click.argument(name, cls=Argument, **attrs)
    return decorator


def option(*decls: str, **attrs: Any) -> Callable[[F], F]:
    """`click.option` showing its default and naming its environment variable in
    `--help`."""
    decorator: Callable[[F], F] = click.option(*decls, cls=Option, **attrs)
    return decorator
