"""Contexts in $XDG_CONFIG_HOME/deployplane/config.yaml, the precedence flag > env >
context, where a context's key comes from, and `version` / `--version`."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click
import httpx
import pytest
import yaml
from click.testing import CliRunner, Result
from tests.support import cli_service
from tests.support.cli_service import LIS_ID, FakeService, assert_one_error_line, listener

from deployplane import __version__
from deployplane.cli.root import root as root_app

service = cli_service.service


@pytest.fixture
def config_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    monkeypatch.delenv("DEPLOYPLANE_CONTEXT", raising=False)
    return tmp_path / "deployplane" / "config.yaml"


def run(*args: str, env: dict[str, str] | None = None) -> Result:
    return CliRunner().invoke(root_app, list(args), env=env)


def listener_call(service: FakeService) -> None:
    service.on("GET", f"/v2/listeners/{LIS_ID}", [httpx.Response(200, json=listener())])


def test_set_use_and_get_contexts(config_home: Path, tmp_path: Path) -> None:
    key_file = tmp_path / "dev.key"
    made = run(
        "config", "set-context", "dev", "--url", "http://dev.test", "--api-key-file", str(key_file)
    )
    assert made.exit_code == 0, made.output
    assert run("config", "set-context", "prod", "--url", "http://prod.test").exit_code == 0
    assert run("config", "current-context").stdout == "dev\n"  # the first one is current
    assert run("config", "use-context", "prod").stdout == 'Switched to context "prod".\n'
    listed = run("config", "get-contexts")
    assert listed.stdout.splitlines() == [
        "CURRENT  NAME  URL               TENANT  API KEY FROM",
        f"         dev   http://dev.test   -       file {key_file}",
        "*        prod  http://prod.test  -       -",
    ]
    saved = yaml.safe_load(config_home.read_text())
    assert saved["current_context"] == "prod"
    assert config_home.stat().st_mode & 0o077 == 0  # owner-only, like a kubeconfig


def test_a_context_holds_no_key_and_set_context_takes_none(config_home: Path) -> None:
    refused = run("config", "set-context", "dev", "--api-key", "literal")
    assert refused.exit_code == 2
    assert not config_home.exists()
    both = run("config", "set-context", "dev", "--api-key-env", "A", "--api-key-command", "b")
    assert both.exit_code == 2
    assert "give one of api_key_file, api_key_command, api_key_env" in assert_one_error_line(both)


def test_an_empty_context_name_is_one_line(config_home: Path) -> None:
    result = run("config", "set-context", "", "--url", "http://dev.test")
    assert result.exit_code == 2
    assert "context '': String should have at least 1 character" in assert_one_error_line(result)
    assert not config_home.exists()


def test_use_of_an_unknown_context_is_one_line(config_home: Path) -> None:
    result = run("config", "use-context", "nope")
    assert result.exit_code == 2
    assert "no context named 'nope'" in assert_one_error_line(result)


@pytest.mark.parametrize("source", ["file", "command", "env"])
def test_the_context_supplies_url_tenant_and_key(
    service: FakeService,
    config_home: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    source: str,
) -> None:
    monkeypatch.delenv("DEPLOYPLANE_CONTROL_PLANE_URL")
    monkeypatch.delenv("DEPLOYPLANE_API_KEY")
    key_file = tmp_path / "k"
    key_file.write_text("key-from-context\n")
    monkeypatch.setenv("CTX_KEY", "key-from-context")
    option = {
        "file": ["--api-key-file", str(key_file)],
        "command": ["--api-key-command", f"{sys.executable} -c \"print('key-from-context')\""],
        "env": ["--api-key-env", "CTX_KEY"],
    }[source]
    args = ["--url", "http://ctx.test", "--tenant-id", "t-1", *option]
    assert run("config", "set-context", "ctx", *args).exit_code == 0
    listener_call(service)
    result = run("listeners", "get", LIS_ID, "-o", "name")
    assert result.exit_code == 0, result.output
    request = service.last
    assert str(request.url).startswith("http://ctx.test/")
    assert request.headers["X-Api-Key"] == "key-from-context"
    assert request.headers["X-Tenant-Id"] == "t-1"


def test_precedence_is_flag_then_env_then_context(
    service: FakeService, config_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CTX_KEY", "context-key")
    set_ctx = ["config", "set-context", "ctx", "--url", "http://ctx.test", "--api-key-env"]
    assert run(*set_ctx, "CTX_KEY").exit_code == 0
    listener_call(service)
    # the fixture's environment: DEPLOYPLANE_CONTROL_PLANE_URL and DEPLOYPLANE_API_KEY
    assert run("listeners", "get", LIS_ID).exit_code == 0
    assert str(service.last.url).startswith(cli_service.URL)
    assert service.last.headers["X-Api-Key"] == cli_service.API_KEY
    monkeypatch.delenv("DEPLOYPLANE_API_KEY")
    assert run("listeners", "get", LIS_ID).exit_code == 0
    assert service.last.headers["X-Api-Key"] == "context-key"
    assert run("listeners", "get", LIS_ID, "--api-key", "flag-key").exit_code == 0
    assert service.last.headers["X-Api-Key"] == "flag-key"


def test_context_flag_names_another_context(
    service: FakeService, config_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("DEPLOYPLANE_CONTROL_PLANE_URL")
    assert run("config", "set-context", "a", "--url", "http://a.test").exit_code == 0
    assert run("config", "set-context", "b", "--url", "http://b.test").exit_code == 0
    listener_call(service)
    assert run("listeners", "get", LIS_ID, "--context", "b").exit_code == 0
    assert str(service.last.url).startswith("http://b.test/")
    unknown = run("listeners", "--context", "zzz", "get", LIS_ID)
    assert unknown.exit_code == 2
    assert "no context named 'zzz'" in assert_one_error_line(unknown)


def test_a_failing_key_command_names_the_context_not_the_key(
    service: FakeService, config_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("DEPLOYPLANE_API_KEY")
    command = f'{sys.executable} -c "import sys; sys.exit(3)"'
    assert run("config", "set-context", "c", "--api-key-command", command).exit_code == 0
    result = run("listeners", "list")
    assert result.exit_code == 2
    assert "context 'c': api_key_command exited 3" in assert_one_error_line(result)
    assert service.requests == []


def test_version_flag_and_command(service: FakeService, config_home: Path) -> None:
    assert run("--version").stdout == f"deployplane {__version__}\n"
    service.on("GET", "/v2/listeners", [httpx.Response(200, json={"resources": [], "offset": 0})])
    result = run("version")
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == [
        f"client: deployplane {__version__}",
        f"server: {cli_service.URL} reachable (API v2; the service publishes no version number)",
    ]
    assert service.last.url.params["limit"] == "1"


def test_version_of_an_unreachable_server_exits_1(service: FakeService, config_home: Path) -> None:
    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("refused")

    service.on("GET", "/v2/listeners", refuse)
    result = run("version")
    assert result.exit_code == 1
    assert "server: http://cp.test unreachable" in result.stdout


def test_every_api_command_takes_context() -> None:
    command: Any = root_app
    ctx: Any = click.Context(command)
    missing = []
    for group_name in ("deployments", "revisions", "listeners", "repos", "providers"):
        group = command.get_command(ctx, group_name)
        for name, sub in group.commands.items():
            if not any("--context" in p.opts for p in sub.params):
                missing.append(f"{group_name} {name}")
    for name in ("apply", "version", "export"):
        if not any("--context" in p.opts for p in command.get_command(ctx, name).params):
            missing.append(name)
    assert missing == []
