"""`deployplane.cli`: the long-running commands start without the rest of the CLI."""

from __future__ import annotations

import subprocess
import sys

import pytest

from deployplane.cli import SERVER_GROUPS, server_group


@pytest.mark.parametrize(
    ("args", "module"),
    [
        (["operator", "run"], "deployplane.controller.cli"),
        (["listener", "run", "--listener-id", "x"], "deployplane.dataplane.cli"),
        (["controlplane", "serve", "--port", "0"], "deployplane.controlplane.cli"),
        (["operator"], None),  # the group's own help: the whole CLI
        (["operator", "run", "--help"], None),
        (["deployments", "list"], None),
        ([], None),
    ],
)
def test_only_server_commands_start_alone(args: list[str], module: str | None) -> None:
    assert server_group(args) == module


_PROBE = """
import sys
from deployplane import cli
try:
    cli.main(sys.argv[1:])
except SystemExit as exit:
    print("exit", exit.code)
print(*sorted(sys.modules))
"""


@pytest.mark.parametrize("group", sorted(SERVER_GROUPS))
def test_a_server_command_loads_none_of_the_other_commands(group: str) -> None:
    """In a fresh interpreter; an unknown option stops the command right after parsing,
    with the usage line the whole CLI gives."""
    sub = {"operator": "run", "listener": "run", "controlplane": "serve"}[group]
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, group, sub, "--bogus"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    exit_line, modules_line = done.stdout.splitlines()[-2:]
    assert exit_line == "exit 2"
    imported = set(modules_line.split())
    assert SERVER_GROUPS[group] in imported
    assert not {m for m in imported if m.startswith("deployplane.cli.commands")}
    assert f"Usage: deployplane {group} {sub} [OPTIONS]" in done.stderr


def test_the_whole_cli_still_answers_everything_else() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "deployplane.cli", "--version"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("deployplane ")
