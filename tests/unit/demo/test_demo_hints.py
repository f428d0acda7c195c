"""`make demo`'s closing lines: every command is whole on its line at 80 columns (a
copied command must not break), kubectl and deployplane by name once PATH is set."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from rich.console import Console

from deployplane.demo import commands as demo

DEEP = "/home/someone/a/rather/deep/checkout/of/the/deployplane/repository"


def printed(monkeypatch: pytest.MonkeyPatch, width: int) -> tuple[list[str], list[str]]:
    """(the lines as a terminal of `width` columns shows them, the commands)."""
    console = Console(width=width, record=True, color_system=None)
    monkeypatch.setattr(demo, "console", console)
    monkeypatch.setattr(demo, "STATE", Path(DEEP) / ".deployplane/demo")
    kubectl = Path("/home/someone/.cache/deployplane/tools-0123456789abcdef/bin/kubectl")
    cluster: Any = SimpleNamespace(
        kubeconfig=Path(DEEP) / ".deployplane/demo/cluster/admin.kubeconfig",
        tools=SimpleNamespace(kubectl=kubectl),
    )
    demo._print_next_steps(cluster)
    commands = demo.next_steps(cluster.kubeconfig, kubectl, demo.STATE)
    return console.export_text().splitlines(), commands


@pytest.mark.parametrize("width", [80, 60, 200])
def test_every_command_is_printed_whole_on_its_own_line(
    monkeypatch: pytest.MonkeyPatch, width: int
) -> None:
    lines, commands = printed(monkeypatch, width)
    assert any(len(command) > 80 for command in commands), "long paths, or this proves nothing"
    for command in commands:
        assert f"  {command}" in lines, "\n".join(lines)
    others = [line for line in lines if line.strip() and line.strip() not in commands]
    assert others == [
        "Everything is running in the background. In a shell:",
        "Stop it all with: make demo-down   (or: deployplane demo down)",
    ], "a fragment of a command on a line of its own"


def test_the_commands_to_run_fit_80_columns_and_need_no_path(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Only the exports carry paths; what one types after them is short."""
    _, commands = printed(monkeypatch, 80)
    exports = [c for c in commands if c.startswith("export ")]
    assert [c.split("=")[0] for c in exports] == [
        "export KUBECONFIG",
        "export PATH",
        "export DEPLOYPLANE_CONTROL_PLANE_URL",
        "export DEPLOYPLANE_API_KEY",
    ]
    assert commands.index("export PATH=" + commands[1].split("=", 1)[1]) < commands.index(
        "kubectl get agentdeployments,listeners -n demo -o wide"
    )
    for command in commands:
        if not command.startswith("export "):
            assert len(f"  {command}") <= 80, command
            assert command.split()[0] in ("kubectl", "deployplane"), command
    path = commands[1]
    assert "/home/someone/.cache/deployplane/tools-0123456789abcdef/bin:" in path
    assert path.endswith(':$PATH"')
    assert commands[0] == f"export KUBECONFIG={DEEP}/.deployplane/demo/cluster/admin.kubeconfig"
