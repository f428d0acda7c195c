"""`deployplane listener run`: the mistakes a user can make are one line and exit 2;
every setting of the agent is an option with its variable, documented by --help."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner

from deployplane.cli.root import root as app
from deployplane.dataplane import options
from deployplane.dataplane import runagent as cli
from deployplane.dataplane.render.settings import DataPlaneSettings
from deployplane.serving.config import Endpoint, ServingConfig

runner = CliRunner()
URL = "http://127.0.0.1:9"
LID = "d3910ba1-0000-4000-8000-000000000001"
ROOT = Path(__file__).resolve().parents[3]


@pytest.mark.parametrize(
    ("args", "env", "message"),
    [
        ([], {}, "give exactly one of --listener-id and --listener"),
        (
            ["--listener-id", "d3910ba1-0000-4000-8000-000000000001", "--listener", "x"],
            {},
            "give exactly one of --listener-id and --listener",
        ),
        (
            ["--listener-id", "abc"],
            {},
            "--control-plane-url (DEPLOYPLANE_CONTROL_PLANE_URL) is not set",
        ),
        (
            ["--listener-id", "abc"],
            {"DEPLOYPLANE_CONTROL_PLANE_URL": "http://127.0.0.1:9"},
            "listener id 'abc' is not a UUID",
        ),
        (
            ["--listener-id", "abc"],
            {
                "DEPLOYPLANE_CONTROL_PLANE_URL": "http://127.0.0.1:9",
                "DEPLOYPLANE_POLL_INTERVAL": "x",
            },
            "--poll-interval (DEPLOYPLANE_POLL_INTERVAL) must be a number of seconds",
        ),
        (
            ["--listener-id", "abc", "--control-plane-url", URL, "--routing", "istio"],
            {},
            "--routing (DEPLOYPLANE_ROUTING): 'istio': expected none | ingress | gateway",
        ),
        (
            ["--listener-id", "abc", "--control-plane-url", URL],
            {"DEPLOYPLANE_AUTOSCALER": "vpa"},
            "--autoscaler (DEPLOYPLANE_AUTOSCALER): 'vpa': expected hpa | keda",
        ),
        (
            ["--listener-id", "abc", "--control-plane-url", URL, "--routing", "gateway"],
            {"DEPLOYPLANE_ROUTE_HOST": "agents.example.com"},
            "needs the Gateway's name (--gateway, DEPLOYPLANE_GATEWAY)",
        ),
        (
            ["--listener-id", "abc", "--control-plane-url", URL, "--keda-runs-per-worker", "0"],
            {},
            "--keda-runs-per-worker (DEPLOYPLANE_KEDA_RUNS_PER_WORKER): 0:",
        ),
        (
            ["--listener-id", "abc", "--control-plane-url", URL, "--network-policy", "maybe"],
            {},
            "--network-policy (DEPLOYPLANE_NETWORK_POLICY): 'maybe': expected true or false",
        ),
        (
            ["--listener-id", LID, "--control-plane-url", URL, "--liveness", ":8080/healthz"],
            {},
            "--liveness must be http://HOST:PORT/PATH, got ':8080/healthz'",
        ),
        (
            ["--listener-id", LID, "--control-plane-url", URL, "--readiness", "http://h/r"],
            {},
            "--readiness must be http://HOST:PORT/PATH, got 'http://h/r'",
        ),
    ],
)
def test_listener_run_refuses_bad_input_in_one_line(
    args: list[str], env: dict[str, str], message: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in (
        "DEPLOYPLANE_CONTROL_PLANE_URL",
        "DEPLOYPLANE_LISTENER_ID",
        "DEPLOYPLANE_LISTENER_NAME",
    ):
        monkeypatch.delenv(name, raising=False)
    result = runner.invoke(app, ["listener", "run", *args], env=env)
    assert result.exit_code == 2
    assert message in result.output
    assert result.output.count("\n") == 1, result.output
    assert "Traceback" not in result.output


def test_listener_run_without_kubernetes_configuration_says_so(
    monkeypatch: pytest.MonkeyPatch, tmp_path: object
) -> None:
    monkeypatch.setenv("KUBECONFIG", "/nonexistent/kubeconfig")
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    result = runner.invoke(
        app,
        ["listener", "run", "--listener-id", "d3910ba1-0000-4000-8000-000000000001"],
        env={"DEPLOYPLANE_CONTROL_PLANE_URL": "http://127.0.0.1:9"},
    )
    assert result.exit_code == 2
    assert "no Kubernetes configuration" in result.output


def chart_agent_variables() -> set[str]:
    """The DEPLOYPLANE_* variables the chart's listener agent Deployment sets."""
    text = (ROOT / "charts/deployplane/templates/listener-agent.yaml").read_text()
    return set(re.findall(r"name: (DEPLOYPLANE_[A-Z_]+)", text))


def test_help_documents_every_setting_the_agent_reads_with_its_variable() -> None:
    """Every variable the chart sets for the agent (and every setting the agent reads) is
    an option of `listener run`, shown in --help with the variable it is read from."""
    command: Any = app
    ctx = click.Context(command)
    run = command.get_command(ctx, "listener").get_command(ctx, "run")
    envvars = {p.envvar: p.opts[0] for p in run.params if p.envvar}
    assert chart_agent_variables() <= set(envvars)
    names = [setting.name for setting in options.SETTINGS]
    assert {options.variable(n) for n in names} <= set(envvars)
    for name in names:
        assert envvars[options.variable(name)] == options.option(name)
    result = runner.invoke(app, ["listener", "run", "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0
    for variable in chart_agent_variables():
        assert variable in result.output
        assert envvars[variable] in result.output


@pytest.mark.parametrize(
    ("args", "env", "want"),
    [
        (["--autoscaler", "keda"], {}, {"autoscaler": "keda"}),
        ([], {"DEPLOYPLANE_AUTOSCALER": "keda"}, {"autoscaler": "keda"}),
        (["--routing", "none"], {"DEPLOYPLANE_ROUTING": "istio"}, {"routing": "none"}),
        (
            ["--routing", "gateway", "--route-host", "a.example.com"],
            {"DEPLOYPLANE_GATEWAY": "infra/edge", "DEPLOYPLANE_NETWORK_POLICY": "false"},
            {
                "routing": "gateway",
                "host": "a.example.com",
                "gateway_namespace": "infra",
                "gateway_name": "edge",
                "network_policy": False,
            },
        ),
        ([], {"DEPLOYPLANE_AUTOSCALER": ""}, {"autoscaler": "hpa"}),
    ],
    ids=["option", "variable", "option over variable", "both at once", "empty means unset"],
)
def test_settings_reach_the_agent_from_options_and_variables(
    args: list[str],
    env: dict[str, str],
    want: dict[str, object],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen: list[tuple[ServingConfig, DataPlaneSettings]] = []

    async def agent(
        config: ServingConfig, lid: object, name: object, ns: str, dp: DataPlaneSettings, _: Any
    ) -> None:
        seen.append((config, dp))

    monkeypatch.setattr(cli, "_main", agent)
    for setting in options.SETTINGS:
        monkeypatch.delenv(options.variable(setting.name), raising=False)
    argv = ["listener", "run", "--listener-id", LID, "--control-plane-url", URL, *args]
    result = runner.invoke(app, [*argv, "--poll-interval", "3"], env=env)
    assert result.exit_code == 0, result.output
    ((config, dataplane),) = seen
    assert (config.control_plane_url, config.poll_interval) == (URL, 3.0)
    assert {key: getattr(dataplane, key) for key in want} == want


def test_the_probes_are_served_where_the_options_say(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[cli.ProbeEndpoints] = []

    async def agent(*args: Any) -> None:
        seen.append(args[-1])

    monkeypatch.setattr(cli, "_main", agent)
    probes = ["--liveness", "http://0.0.0.0:8080/healthz", "--readiness", "http://0.0.0.0:81/r"]
    for given in ([], probes):
        argv = ["listener", "run", "--listener-id", LID, "--control-plane-url", URL, *given]
        result = runner.invoke(app, argv)
        assert result.exit_code == 0, result.output
    assert seen == [
        cli.ProbeEndpoints(),
        cli.ProbeEndpoints(Endpoint("0.0.0.0", 8080, "/healthz"), Endpoint("0.0.0.0", 81, "/r")),
    ]
