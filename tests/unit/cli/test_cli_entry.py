"""The command line loads what a command runs and nothing else: the structural rule that
makes `deployplane --version`, `--help` and a TAB (`deployplane __complete ...`) answer
in a tenth of a second (the figures themselves are bench/cli.py's, not a test's). Each
check runs in a fresh interpreter and reads its `sys.modules`."""

from __future__ import annotations

import os
import subprocess
import sys

import click
import pytest

from deployplane.cli.lazy import load
from deployplane.cli.root import COMMANDS

HEAVY = (
    "kubernetes",
    "kopf",
    "httpx",
    "pydantic",
    "rich",
    "yaml",
    "fastapi",
    "sqlalchemy",
    "typer",
)
"""What neither the command table (every declaration), nor `--help`, nor a TAB may
import."""

_PROBE = """
import sys
from deployplane.cli import main
try:
    main(sys.argv[1:])
except SystemExit as exit:
    print("exit", exit.code)
print(*sorted(name for name, module in sys.modules.items() if module is not None))
"""


def modules_after(*args: str, env: dict[str, str] | None = None) -> tuple[str, set[str]]:
    """Run `deployplane ARGS` in a fresh interpreter: its output, and every module
    it had imported at the end."""
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, *args],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **(env or {})},
    )
    *output, modules_line = done.stdout.splitlines()
    return "\n".join(output) + done.stderr, set(modules_line.split())


def heavy(modules: set[str]) -> list[str]:
    return sorted(m for m in modules if m.split(".")[0] in HEAVY)


def declarations(modules: set[str]) -> set[str]:
    """The modules of `deployplane.cli.commands` and `deployplane.cli.programs`."""
    return {
        m for m in modules if m.startswith(("deployplane.cli.commands", "deployplane.cli.programs"))
    }


_WHOLE_TABLE = """
import sys, click
from deployplane.cli.root import root

def walk(command, ctx):
    if isinstance(command, click.Group):
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            walk(sub, click.Context(sub, info_name=name, parent=ctx))

walk(root, click.Context(root, info_name="deployplane"))
print(*sorted(name for name, module in sys.modules.items() if module is not None))
"""


def test_the_whole_command_table_imports_no_heavy_library() -> None:
    """Every command's declaration (its options, help and completers) loads without
    what the commands run: a TAB may go anywhere in it."""
    done = subprocess.run(
        [sys.executable, "-c", _WHOLE_TABLE], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    imported = set(done.stdout.split())
    assert "deployplane.cli.programs.agent" in imported
    assert "deployplane.cli.commands.deployments" in imported
    assert heavy(imported) == []
    # the programs themselves are imported when they run
    assert not {"deployplane.controller.run", "deployplane.dataplane.runagent"} & imported


_IMPORT_ROOT = """
import sys, deployplane.cli.root
print(*sorted(name for name, module in sys.modules.items() if module is not None))
"""


def test_importing_the_cli_root_imports_no_command() -> None:
    done = subprocess.run(
        [sys.executable, "-c", _IMPORT_ROOT],
        capture_output=True,
        text=True,
        timeout=60,
    )
    imported = set(done.stdout.split())
    assert "deployplane.cli.root" in imported
    assert heavy(imported) == []
    assert not declarations(imported)


def test_version_answers_before_the_command_line_is_loaded() -> None:
    output, imported = modules_after("--version")
    assert output.splitlines()[0].startswith("deployplane ")
    assert not {m for m in imported if m.split(".")[0] in ("click", *HEAVY)}
    assert "deployplane.cli.root" not in imported


@pytest.mark.parametrize(
    "args",
    [
        ["--version", "--help"],
        ["--help"],
        ["deployments", "--help"],
        ["revisions", "--help"],
        ["listeners", "--help"],
        ["config", "--help"],
        ["deployments", "list", "--help"],
        ["listener", "run", "--help"],
    ],
    ids=" ".join,
)
def test_help_and_version_import_no_heavy_library(args: list[str]) -> None:
    output, imported = modules_after(*args)
    assert "exit 0" in output
    assert heavy(imported) == []


@pytest.mark.parametrize(
    ("words", "group"),
    [
        (["deployments", ""], "deployplane.cli.commands.deployments"),
        (["deployments", "list", "--"], "deployplane.cli.commands.deployments"),
        (["deployments", "get", ""], "deployplane.cli.commands.deployments"),
        (["operator", "run", "--"], "deployplane.cli.programs.operator"),
    ],
    ids=lambda v: " ".join(v) if isinstance(v, list) else v,
)
def test_a_tab_loads_the_declarations_the_words_lead_to_and_nothing_heavy(
    words: list[str], group: str
) -> None:
    env = {
        # nothing answers there: the TAB offers no name, and says nothing
        "DEPLOYPLANE_CONTROL_PLANE_URL": "http://127.0.0.1:9",
        "DEPLOYPLANE_API_KEY": "k",
    }
    output, imported = modules_after("__complete", *words, env=env)
    assert output.splitlines()[-2].startswith(":")  # the directive, then the exit
    assert output.endswith("exit 0")
    assert heavy(imported) == []
    assert group in imported
    others = {m for m in declarations(imported) if not m.startswith(group)}
    # what a declaration shares with the others (options, completers) and nothing else
    assert others <= {
        "deployplane.cli.commands",
        "deployplane.cli.commands.options",
        "deployplane.cli.commands.connection",
        "deployplane.cli.commands.completers",
        "deployplane.cli.commands.kubeoptions",
        "deployplane.cli.commands.edit",
        "deployplane.cli.commands.edit.commands",
        "deployplane.cli.commands.logs",
        "deployplane.cli.programs",
    }, others


def test_a_tab_at_the_root_reads_every_command_and_nothing_heavy() -> None:
    output, imported = modules_after("__complete", "")
    assert "deployments\tCreate, change, delete and wait for deployments." in output
    assert heavy(imported) == []


@pytest.mark.parametrize(
    ("group", "sub", "module"),
    [
        ("operator", "run", "deployplane.controller.run"),
        ("listener", "run", "deployplane.dataplane.runagent"),
        ("controlplane", "serve", "deployplane.emulator.serve"),
    ],
)
def test_a_server_command_loads_none_of_the_other_commands(
    group: str, sub: str, module: str
) -> None:
    """An unknown option stops the command right after parsing its options: before its
    program is imported."""
    output, imported = modules_after(group, sub, "--bogus")
    assert "exit 2" in output
    assert not {m for m in imported if m.startswith("deployplane.cli.commands")}
    programs = {"deployplane.controller.run", "deployplane.dataplane.runagent", module}
    assert not programs & imported
    assert heavy(imported) == []
    assert f"Usage: deployplane {group} {sub} [OPTIONS]" in output


@pytest.mark.parametrize(("name", "target"), COMMANDS.items(), ids=list(COMMANDS))
def test_every_command_of_the_table_is_declared_where_it_says(name: str, target: str) -> None:
    command = load(target)
    assert isinstance(command, click.Command)
    assert command.name == name


def test_a_mistyped_command_is_suggested_without_loading_anything() -> None:
    output, imported = modules_after("deploymnets", "list")
    assert "exit 2" in output
    assert "No such command 'deploymnets'. Did you mean 'deployments'?" in output
    assert not declarations(imported)


def test_python_m_deployplane_cli_is_the_same_command() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "deployplane.cli", "--version"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("deployplane ")
