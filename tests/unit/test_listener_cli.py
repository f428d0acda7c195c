"""`deployplane listener run`: the mistakes a user can make are one line and exit 2."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from deployplane.cliapp import app

runner = CliRunner()
URL = "http://127.0.0.1:9"


@pytest.mark.parametrize(
    ("args", "env", "message"),
    [
        ([], {}, "give exactly one of --listener-id and --listener"),
        (
            ["--listener-id", "d3910ba1-0000-4000-8000-000000000001", "--listener", "x"],
            {},
            "give exactly one of --listener-id and --listener",
        ),
        (["--listener-id", "abc"], {}, "DEPLOYPLANE_CONTROL_PLANE_URL is not set"),
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
            "DEPLOYPLANE_POLL_INTERVAL must be a number of seconds",
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
