"""The CLI's unit tests' fake control plane: `FakeService` answers by (method, path)
over httpx.MockTransport and records every request the CLI made; the `service` fixture
points the commands' client at it (no retry waits); the API bodies it answers with
(`deployment`, `revision`, `listener`); and `run`, the whole command line through
click's runner. A test module takes `service` by importing it by name."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click
import httpx
import pytest
from click.testing import CliRunner, Result

from deployplane.api.client import ControlPlaneClient
from deployplane.api.connection import ConnectionSettings
from deployplane.cli.commands import connection
from deployplane.cli.root import root as root_app

API_KEY = "lsv2_sk_cli-secret-key-987654321"
URL = "http://cp.test"
NOW = "2025-01-02T03:04:05Z"
DEP_ID = "11111111-1111-4111-8111-111111111111"
REV_ID = "22222222-2222-4222-8222-222222222222"
LIS_ID = "33333333-3333-4333-8333-333333333333"


def deployment(**over: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "id": DEP_ID,
        "tenant_id": "99999999-9999-4999-8999-999999999999",
        "name": "agent-one",
        "source": "external_docker",
        "source_revision_config": {"image_uri": "img:1"},
        "created_at": NOW,
        "updated_at": NOW,
        "status": "READY",
        "latest_revision_id": REV_ID,
        "active_revision_id": REV_ID,
        "image_version": "1.0",
    }
    body.update(over)
    return body


def revision(status: str = "DEPLOYED") -> dict[str, Any]:
    return {
        "id": REV_ID,
        "created_at": NOW,
        "updated_at": NOW,
        "status": status,
        "source": "external_docker",
        "source_revision_config": {"image_uri": "img:1"},
    }


def listener(**over: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "id": LIS_ID,
        "compute_type": "k8s",
        "compute_id": "cluster-a",
        "compute_config": {"k8s_namespaces": ["team-a"]},
        "version": "v1",
        "created_at": NOW,
        "updated_at": NOW,
    }
    body.update(over)
    return body


Route = Callable[[httpx.Request], httpx.Response]


class FakeService:
    """Answers by (method, path); records every request the CLI made."""

    def __init__(self) -> None:
        self.routes: dict[tuple[str, str], Route | list[httpx.Response]] = {}
        self.requests: list[httpx.Request] = []

    def on(self, method: str, path: str, answer: Route | list[httpx.Response]) -> None:
        self.routes[(method, path)] = answer

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        answer = self.routes.get((request.method, request.url.path))
        if answer is None:
            return httpx.Response(404, json={"detail": "no route"})
        if isinstance(answer, list):
            return answer.pop(0) if len(answer) > 1 else answer[0]
        return answer(request)

    @property
    def last(self) -> httpx.Request:
        return self.requests[-1]


@pytest.fixture
def service(monkeypatch: pytest.MonkeyPatch) -> FakeService:
    fake = FakeService()
    clock = {"now": 0.0}

    async def no_wait(seconds: float) -> None:
        clock["now"] += seconds

    def factory(settings: ConnectionSettings) -> ControlPlaneClient:
        return settings.client(
            transport=httpx.MockTransport(fake),
            max_retries=1,
            sleep=no_wait,
            clock=lambda: clock["now"],
        )

    monkeypatch.setattr(connection, "make_client", factory)
    monkeypatch.setenv("DEPLOYPLANE_CONTROL_PLANE_URL", URL)
    monkeypatch.setenv("DEPLOYPLANE_API_KEY", API_KEY)
    monkeypatch.delenv("DEPLOYPLANE_TENANT_ID", raising=False)
    return fake


def make_app() -> click.Command:
    # The whole command line: it loads only the commands a test runs.
    return root_app


def run(*args: str, stdin: str | None = None) -> Result:
    return CliRunner().invoke(make_app(), list(args), input=stdin)


def assert_one_error_line(result: Result) -> str:
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: ")
    assert "Traceback" not in result.output
    return lines[0]
