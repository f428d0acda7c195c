"""`deployplane __complete WORDS... CURRENT`: what a TAB offers, in cobra's protocol.

The words are the command line after `deployplane`, the last the one being completed
(empty after a space). The answer is one line per value that fits (`VALUE`, or with
descriptions `VALUE<tab>DESCRIPTION` on one line), then `:DIRECTIVE`, the sum of
cobra's `ShellCompDirective`s the shell acts on: no file names where a command, an
option, a choice or a resource's name is wanted (even when no name fits, so that
`deployplane deployments get <TAB>` with no control plane configured offers nothing
rather than the current directory), the shell's file names where a path or a free
value is, its directories where a directory is. Nothing is ever printed on stderr,
which is the user's screen: an error is `:1` alone.

The values are click's own (`click.shell_completion`): the words parsed as the commands
parse them, leniently, to the command being typed and the parameter being completed,
which offers its values (a completer of its own, its type's choices) or, for a command,
its commands and its options. The two steps are the functions click's public
`ShellComplete.get_completions` calls (`_resolve_context`, `_resolve_incomplete`), called
here to know the parameter too, for the directive (click is pinned to the minor versions
the tests ran, tests/unit/cli/test_cli_complete.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

import click
from click.shell_completion import CompletionItem, _resolve_context, _resolve_incomplete

from deployplane.cli.params import has_completer

__all__ = [
    "DIRECTIVE_ERROR",
    "DIRECTIVE_FILES",
    "DIRECTIVE_FILTER_DIRS",
    "DIRECTIVE_NO_FILE_COMP",
    "DIRECTIVE_NO_SPACE",
    "answer",
    "complete",
    "complete_no_descriptions",
]

DIRECTIVE_FILES: Final = 0
"""cobra's ShellCompDirectiveDefault: the shell may offer file names when nothing fits."""
DIRECTIVE_ERROR: Final = 1
DIRECTIVE_NO_SPACE: Final = 2
DIRECTIVE_NO_FILE_COMP: Final = 4
DIRECTIVE_FILTER_DIRS: Final = 16


def _files_allowed(param: click.Parameter) -> bool:
    """Whether a value of `param` may be a file name the shell offers: a value click
    leaves to the shell (no completer, no choices of its own)."""
    return not isinstance(param.type, click.Choice) and not has_completer(param)


def _directive(target: click.Command | click.Parameter, items: list[CompletionItem]) -> int:
    kinds = {item.type for item in items}
    if isinstance(target, click.Command):
        return DIRECTIVE_NO_FILE_COMP
    if "dir" in kinds:
        return DIRECTIVE_FILTER_DIRS
    if "file" in kinds or _files_allowed(target):
        return DIRECTIVE_FILES
    return DIRECTIVE_NO_FILE_COMP


def offered(root: click.Command, words: Sequence[str]) -> tuple[list[CompletionItem], int]:
    """The values offered for the last of `words` (after `deployplane`), and the
    directive."""
    args, incomplete = list(words[:-1]), words[-1] if words else ""
    ctx = _resolve_context(root, {}, root.name or "", list(args))
    target, incomplete = _resolve_incomplete(ctx, args, incomplete)
    items = target.shell_complete(ctx, incomplete)
    plain = [item for item in items if item.type == "plain"]
    return plain, _directive(target, items)


def _line(item: CompletionItem, descriptions: bool) -> str:
    value = " ".join(str(item.value).split())
    help = " ".join((item.help or "").split())
    return f"{value}\t{help}" if descriptions and help else value


def answer(root: click.Command, words: Sequence[str], descriptions: bool = True) -> str:
    """What `__complete` prints for `words`: never raises (a TAB never fails)."""
    try:
        items, directive = offered(root, words)
    except Exception:  # whatever it is, the shell offers nothing and shows nothing
        return f":{DIRECTIVE_ERROR}\n"
    return "".join(f"{_line(item, descriptions)}\n" for item in items) + f":{directive}\n"


class _Complete(click.Command):
    """Takes every word as it comes: each is the shell's, to be completed (`--` and
    `--help` included), none an option of its own."""

    def __init__(self, name: str, descriptions: bool) -> None:
        super().__init__(name, hidden=True, add_help_option=False, callback=self.answer)
        self.descriptions = descriptions

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        ctx.params = {"words": tuple(args)}
        return []

    def answer(self, words: tuple[str, ...]) -> None:
        root: Any = click.get_current_context().find_root().command
        click.echo(answer(root, words, self.descriptions), nl=False)


complete = _Complete("__complete", descriptions=True)
"""`__complete`: the values and their descriptions (cobra's `__complete`)."""
complete_no_descriptions = _Complete("__completeNoDesc", descriptions=False)
"""`__completeNoDesc`: the values alone (`deployplane completion SHELL --no-descriptions`)."""
