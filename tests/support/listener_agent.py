"""The listener agent as the e2e tests run it: `deployplane listener run` as a real
process with the chart's RBAC for its identity, serving its probes on ports of its own."""

from __future__ import annotations

import contextlib
import socket
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx
from tests.support import polling
from tests.support.operator_harness import API_KEY, WORKSPACE, CliProcess

LISTENER = "edge"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _answers(url: str) -> int | None:
    with contextlib.suppress(httpx.HTTPError):
        return httpx.get(url, timeout=2).status_code
    return None


@dataclass
class AgentProcess(CliProcess):
    """`deployplane listener run` for the test's Listener, serving its probes as the
    chart's kubelet asks them."""

    liveness: str = field(default_factory=lambda: f"http://127.0.0.1:{_free_port()}/healthz")
    readiness: str = field(default_factory=lambda: f"http://127.0.0.1:{_free_port()}/readyz")

    def arguments(self) -> list[str]:
        return [
            "listener",
            "run",
            "--listener",
            LISTENER,
            "--namespace",
            self.namespace,
            "--liveness",
            self.liveness,
            "--readiness",
            self.readiness,
            "--verbose",
        ]

    def wait_running(self) -> None:
        """Until the agent has its listener's id and sent its first heartbeat: only then
        does the control plane hand it the deploy stages (before, the simulated pipeline
        would deploy a revision on its timers, as for a listener without an agent). Its
        readiness says so too (the apiserver and the control plane answer), alive."""
        polling.wait_until(
            "the agent to run", lambda: "listener agent running" in self.log, 120, interval=0.25
        )
        polling.wait_until(
            "the agent ready", lambda: _answers(self.readiness) == 200, 30, interval=0.25
        )
        assert _answers(self.liveness) == 200


def agent_env(control_plane_url: str, kubeconfig: Path, poll_interval: float) -> dict[str, str]:
    """The agent's environment as the chart sets it, for the e2e tests' workspace."""
    return {
        "KUBECONFIG": str(kubeconfig),
        "DEPLOYPLANE_CONTROL_PLANE_URL": control_plane_url,
        "DEPLOYPLANE_API_KEY": API_KEY,
        "DEPLOYPLANE_TENANT_ID": WORKSPACE,
        "DEPLOYPLANE_POLL_INTERVAL": str(poll_interval),
    }


@contextlib.contextmanager
def running_agent(namespace: str, env: dict[str, str], log: Path) -> Iterator[AgentProcess]:
    """The agent started, then stopped by its pid; its log's tail printed (pytest shows
    it when the test failed), and never a trace of the API key in it."""
    process = AgentProcess(namespace, env, log).start()
    try:
        yield process
    finally:
        process.stop()
        print("agent log (tail):\n" + process.log[-6000:])
    assert API_KEY not in process.log  # secrets never reach the agent's logs
