"""The emulator's built-in data plane asks for what it needs and imports no agent: one
(connection, listener) per workspace with an API key goes to the runner it is handed,
and a workspace without a key, or a runner that cannot start, is one line."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import uuid
from collections.abc import Sequence

import pytest

from deployplane.api.connection import ConnectionSettings
from deployplane.api.models import Listener
from deployplane.emulator.builtindataplane import run_builtin_dataplane
from deployplane.emulator.settings import EmulatorConfig, WorkspaceConfig
from deployplane.emulator.store.agents import builtin_listener_id
from deployplane.serving.errors import StartupError

URL = "http://127.0.0.1:8124"


def workspace(name: str, *keys: str) -> WorkspaceConfig:
    return WorkspaceConfig(id=uuid.uuid5(uuid.NAMESPACE_DNS, name), name=name, api_keys=list(keys))


def test_each_workspace_with_a_key_gets_an_agent_for_its_builtin_listener() -> None:
    keyed, keyless = workspace("a", "key-a", "key-a2"), workspace("b")
    handed: list[Sequence[tuple[ConnectionSettings, Listener]]] = []

    async def runner(placements: Sequence[tuple[ConnectionSettings, Listener]]) -> None:
        handed.append(placements)

    config = EmulatorConfig(workspaces=[keyed, keyless])
    asyncio.run(run_builtin_dataplane(config, URL, "agents", runner))
    [[(connection, listener)]] = handed
    assert (connection.url, connection.api_key) == (URL, "key-a")
    assert listener.id == builtin_listener_id(keyed.id)
    assert listener.compute_config is not None
    assert listener.compute_config.k8s_namespaces == ["agents"]


def test_no_workspace_with_a_key_is_one_line_and_runs_nothing() -> None:
    async def runner(placements: Sequence[tuple[ConnectionSettings, Listener]]) -> None:
        raise AssertionError("nothing to run")

    config = EmulatorConfig(workspaces=[workspace("b")])
    with pytest.raises(StartupError, match=r"^--builtin-dataplane: no workspace has an API key"):
        asyncio.run(run_builtin_dataplane(config, URL, "agents", runner))


def test_the_emulator_serves_without_loading_the_listener_agent() -> None:
    """The emulator's modules, its built-in data plane's included, import no part of
    the agent: the command line hands it the agent's runner."""
    code = (
        "import sys, deployplane.emulator.serve, deployplane.emulator.builtindataplane, "
        "deployplane.emulator.web.app; "
        "print(sorted(m for m in sys.modules if m.startswith('deployplane.dataplane')))"
    )
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    assert out.stdout.strip() == "[]"
