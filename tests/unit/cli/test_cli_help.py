"""Every command's `--help` as an 80-column terminal shows it: plain text at most 80
wide, lines broken at spaces only (never inside an option, a command's name or an
environment variable's name), a value list and a variable whole, no `<bool>` for a flag;
`-o` is the output format wherever it appears; `completion` prints each shell's script."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import click
import pytest
from click.testing import CliRunner

from deployplane.cli.commands.completion import Shell, script
from deployplane.cli.helptext import HelpContext
from deployplane.cli.root import root as app

WIDTH = 80


def every_command() -> Iterator[tuple[str, Any, click.Context]]:
    """(path, command, its context) of the root and every command below it."""
    root: Any = app
    root_ctx = HelpContext(root, info_name="deployplane", terminal_width=WIDTH)
    yield "deployplane", root, root_ctx

    def walk(command: Any, ctx: click.Context, path: str) -> Iterator[tuple[str, Any, Any]]:
        yield path, command, ctx
        names = command.list_commands(ctx) if isinstance(command, click.Group) else []
        for name in sorted(names):
            sub = command.get_command(ctx, name)
            sub_ctx = HelpContext(sub, info_name=name, parent=ctx, terminal_width=WIDTH)
            yield from walk(sub, sub_ctx, f"{path} {name}")

    for name in root.list_commands(root_ctx):
        command = root.get_command(root_ctx, name)
        if not command.hidden:
            ctx = HelpContext(command, info_name=name, parent=root_ctx, terminal_width=WIDTH)
            yield from walk(command, ctx, f"deployplane {name}")


COMMANDS = list(every_command())


@pytest.mark.parametrize(("path", "command", "ctx"), COMMANDS, ids=[c[0] for c in COMMANDS])
def test_help_fits_80_columns_and_cuts_nothing(path: str, command: Any, ctx: Any) -> None:
    text = command.get_help(ctx)
    assert "<bool>" not in text
    assert "╭" not in text  # plain text, not rich's boxes
    too_wide = [line for line in text.splitlines() if len(line) > WIDTH]
    assert too_wide == []
    # never broken at a hyphen: no line ends inside a word (`get-` / `contexts`)
    assert not re.search(r"\w-\n\s*\w", text), text
    flat = " ".join(text.split())
    for param in command.params:
        if getattr(param, "show_envvar", False) and param.envvar:
            assert param.envvar in flat
        if isinstance(param.type, click.Choice):
            # the values: whole in the option's column, or each one in its help
            values = [str(c).lower() for c in param.type.choices]
            listed = "|".join(values)
            lines = text.lower().splitlines()
            if not any(listed in line for line in lines):
                assert param.metavar, f"{param.name}: its values are neither listed nor named"
                words = set(re.findall(r"[\w-]+", flat.lower()))
                assert set(values) <= words, param.name


def test_o_is_the_output_format_in_every_command() -> None:
    formats = {"table", "wide", "json", "yaml", "name"}
    # A plan is also a pull request's comment (docs/gitops.md, "Plan in pull requests").
    more = {"deployplane plan": {"markdown"}}
    having = []
    for path, command, _ in COMMANDS:
        for param in command.params:
            if "-o" in param.opts:
                assert "--output" in param.opts, path
                assert isinstance(param.type, click.Choice), path
                allowed = formats | more.get(path, set())
                assert {str(c) for c in param.type.choices} <= allowed, path
                having.append(path)
    assert {"deployplane export", "deployplane deployments list", "deployplane apply"} <= set(
        having
    )


@pytest.mark.parametrize(
    ("shell", "says"),
    [
        ("bash", "complete -o default -F __start_deployplane deployplane"),
        ("zsh", "compdef _deployplane deployplane"),
        ("fish", "complete -c deployplane -n '__deployplane_prepare_completions'"),
        ("powershell", "Register-ArgumentCompleter -CommandName 'deployplane'"),
    ],
)
def test_completion_prints_the_script_of_each_shell(shell: str, says: str) -> None:
    """Each script registers itself, and asks `deployplane __complete` at a TAB."""
    result = CliRunner().invoke(app, ["completion", shell], prog_name="deployplane")
    assert result.exit_code == 0, result.output
    assert says in result.stdout
    assert " __complete " in result.stdout
    assert "__completeNoDesc" not in result.stdout


@pytest.mark.parametrize("shell", list(Shell))
def test_without_descriptions_the_script_asks_for_the_values_alone(shell: Shell) -> None:
    result = CliRunner().invoke(app, ["completion", shell.value, "--no-descriptions"])
    assert result.exit_code == 0, result.output
    assert result.stdout == script(shell, descriptions=False)
    asking = [line for line in result.stdout.splitlines() if "__complete" in line]
    code = [line for line in asking if "#" not in line]
    assert len(code) == 1
    assert " __completeNoDesc " in code[0]


def test_completion_of_an_unknown_shell_is_a_usage_error() -> None:
    result = CliRunner().invoke(app, ["completion", "tcsh"], prog_name="deployplane")
    assert result.exit_code == 2
    assert "bash" in result.output
