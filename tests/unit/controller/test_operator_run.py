"""`deployplane operator run`: which namespaces Kopf is told to watch, and the variable
the start-up line reads them from (docs/install.md, "The operator's scope")."""

from __future__ import annotations

import os
from typing import Any

import pytest
from click.testing import CliRunner

from deployplane.cli.root import root
from deployplane.controller import run as cli


@pytest.mark.parametrize(
    ("args", "env", "want"),
    [
        ([], {}, []),
        ([], {"DEPLOYPLANE_NAMESPACES": "team-a,team-*"}, ["team-a", "team-*"]),
        (["-n", "demo"], {"DEPLOYPLANE_NAMESPACES": "team-a"}, ["demo"]),
        (["-n", "a", "--namespace", "b"], {}, ["a", "b"]),
    ],
    ids=["every namespace", "the variable", "the flag wins", "repeated"],
)
def test_the_namespaces_kopf_watches_are_the_ones_the_start_up_line_names(
    args: list[str], env: dict[str, str], want: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    ran: dict[str, Any] = {}
    monkeypatch.setattr(cli, "_run_kopf", lambda **kwargs: ran.update(kwargs))
    for variable in ("DEPLOYPLANE_NAMESPACES", "DEPLOYPLANE_SHARD", "DEPLOYPLANE_SHARD_DEFAULT"):
        monkeypatch.delenv(variable, raising=False)  # restored afterwards: the command sets them
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    result = CliRunner().invoke(root, ["operator", "run", *args])
    assert result.exit_code == 0, result.output
    assert ran["namespaces"] == want
    assert os.environ["DEPLOYPLANE_NAMESPACES"] == ",".join(want)
