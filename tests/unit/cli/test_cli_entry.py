"""The command line loads what a command runs and nothing else: the structural rule that
makes `deployplane --version`, `--help` and a TAB answer in a tenth of a second (the
figures themselves are bench/cli.py's, not a test's). Each check runs in a fresh
interpreter and reads its `sys.modules`."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import click
import pytest

from deployplane.cli.lazy import Entry, load
from deployplane.cli.root import ENTRIES
from deployplane.cli.tab.shells import NO_FILES

HEAVY = ("kubernetes", "kopf", "httpx", "pydantic", "rich", "yaml", "fastapi", "sqlalchemy")
"""What no answer of the root, of a group's help or of a TAB may import."""

_PROBE = """
import sys
from deployplane.cli import main
try:
    main(sys.argv[1:])
except SystemExit as exit:
    print("exit", exit.code)
print(*sorted(sys.modules))
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


def test_importing_the_cli_root_imports_no_heavy_library() -> None:
    done = subprocess.run(
        [sys.executable, "-c", "import sys, deployplane.cli.root; print(*sorted(sys.modules))"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    imported = set(done.stdout.split())
    assert "deployplane.cli.root" in imported
    assert heavy(imported) == []
    assert not {m for m in imported if m.startswith("deployplane.cli.commands")}


def test_version_answers_before_the_command_line_is_loaded() -> None:
    output, imported = modules_after("--version")
    assert output.splitlines()[0].startswith("deployplane ")
    assert not {m for m in imported if m.split(".")[0] in ("typer", "click", *HEAVY)}
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
    ],
    ids=" ".join,
)
def test_help_and_version_import_no_heavy_library(args: list[str]) -> None:
    output, imported = modules_after(*args)
    assert "exit 0" in output
    assert heavy(imported) == []


@pytest.mark.parametrize(
    "words",
    [
        "deployplane ",
        "deployplane deployments ",
        "deployplane deployments list --",
        "deployplane deployments get ",
    ],
    ids=repr,
)
def test_a_tab_is_answered_without_typer_or_any_command(words: str) -> None:
    env = {
        "_DEPLOYPLANE_COMPLETE": "complete_bash",
        "COMP_WORDS": words,
        "COMP_CWORD": str(words.count(" ")),
        # nothing answers there: the TAB offers no name, and says nothing
        "DEPLOYPLANE_CONTROL_PLANE_URL": "http://127.0.0.1:9",
        "DEPLOYPLANE_API_KEY": "k",
    }
    output, imported = modules_after(env=env)
    # no name for `get`: NO_FILES, so that bash offers no file names in their place
    assert output.endswith(f"exit {NO_FILES if words.endswith(' get ') else 0}")
    assert not {m for m in imported if m.split(".")[0] in ("typer", "click", *HEAVY)}
    assert not {
        m for m in imported if m.startswith(("deployplane.cli.commands", "deployplane.cli.root"))
    }
    # nor typing or dataclasses (a tenth of the answer each), nor re where no name is
    # asked of the control plane (http.client imports it)
    assert not {"typing", "dataclasses"} & imported
    if not words.endswith(" get "):
        assert "re" not in imported


def test_a_tab_the_tree_leaves_to_click_is_clicks(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """What `deployplane.cli.tab` does not answer, the root answers through click."""
    import deployplane.cli

    monkeypatch.setattr(deployplane.cli, "answer", lambda environ: None)
    for name, value in {
        "_DEPLOYPLANE_COMPLETE": "complete_bash",
        "COMP_WORDS": "deployplane dep",
        "COMP_CWORD": "1",
    }.items():
        monkeypatch.setenv(name, value)
    with pytest.raises(SystemExit) as exit:
        deployplane.cli.main([])
    assert exit.value.code == 0
    assert capsys.readouterr().out == "deployments\n"


@pytest.mark.parametrize(
    ("group", "sub", "module"),
    [
        ("operator", "run", "deployplane.controller.run"),
        ("listener", "run", "deployplane.dataplane.runagent"),
        ("controlplane", "serve", "deployplane.controlplane.serve"),
    ],
)
def test_a_server_command_loads_none_of_the_other_commands(
    group: str, sub: str, module: str
) -> None:
    """An unknown option stops the command right after parsing its options."""
    output, imported = modules_after(group, sub, "--bogus")
    assert "exit 2" in output
    assert module in imported
    assert not {m for m in imported if m.startswith("deployplane.cli.commands")}
    others = {"deployplane.controller.run", "deployplane.dataplane.runagent"} - {module}
    assert not others & imported
    assert f"Usage: deployplane {group} {sub} [OPTIONS]" in output


def leaves(entries: tuple[Entry, ...], path: str = "") -> Iterator[tuple[str, Entry]]:
    for entry in entries:
        yield f"{path} {entry.name}".strip(), entry
        yield from leaves(entry.commands, f"{path} {entry.name}")


@pytest.mark.parametrize(("path", "entry"), list(leaves(ENTRIES)), ids=lambda v: str(v))
def test_every_entry_of_the_table_loads_as_what_it_says(path: str, entry: Entry) -> None:
    command = load(entry)
    assert command.name == entry.name
    assert isinstance(command, click.Group) == entry.group, path
    assert command.get_short_help_str(100) == entry.help
    if entry.commands:  # listed: exactly the commands its module has
        spec, *where = leaf_target(entry).split()
        depth = len(where) - 1 - entry_depth(entry)
        real: Any = load(Entry(entry.name, " ".join([spec, *where[:depth]]), entry.help))
        assert sorted(real.commands) == sorted(e.name for e in entry.commands), path


def leaf_target(entry: Entry) -> str:
    return entry.target if not entry.commands else leaf_target(entry.commands[0])


def entry_depth(entry: Entry) -> int:
    """How many levels below `entry` its first leaf is, less one."""
    return 0 if not entry.commands[0].commands else 1 + entry_depth(entry.commands[0])


def test_a_mistyped_command_is_suggested_without_loading_anything() -> None:
    output, imported = modules_after("deploymnets", "list")
    assert "exit 2" in output
    assert "No such command 'deploymnets'. Did you mean 'deployments'?" in output
    assert not {m for m in imported if m.startswith("deployplane.cli.commands")}


def test_python_m_deployplane_cli_is_the_same_command() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "deployplane.cli", "--version"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("deployplane ")
