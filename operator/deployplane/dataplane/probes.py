"""The listener agent's two probes, the operator's two questions
(`deployplane.controller.probes`, `deployplane.serving.probes`) asked of
`deployplane listener run`:

- liveness, "is the process stuck?" (`--liveness URL`): answered from the agent's event
  loop, so a loop that no longer turns answers nothing; it fails when the agent's
  heartbeat task ended (`Agent.stalled`). It never looks at the Kubernetes API or the
  control plane: restarting cannot bring them back;
- readiness, "can it work now?" (`--readiness URL`): it fails while the apiserver does not
  answer `GET /readyz` as ready, while the agent's own Kubernetes requests have been
  failing for longer than `ServingConfig.unhealthy_after`, or while the control plane
  does not answer a published read; each asked as the operator asks them.

Both are served from the start. An agent still waiting for its Listener's id (the
operator writes it once the Listener resource exists) is alive and ready: it needs
nothing that is away, and an install that waits for Ready (`helm install --wait`,
`kubectl rollout status`) must finish before the Listener is applied.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from deployplane.api.connection import ConnectionSettings
from deployplane.dataplane.agent import Agent
from deployplane.kube.api import KubernetesApi
from deployplane.kube.retry import Backoff
from deployplane.serving import probes
from deployplane.serving.config import Endpoint
from deployplane.serving.probes import Close, ProbeServer, Readiness

__all__ = ["AgentProbes"]

Found = tuple[bool, dict[str, Any]]


@dataclass
class AgentProbes:
    """The agent's probes; `agent` is set once it runs (liveness then asks it)."""

    readiness: Readiness | None
    agent: Agent | None = None
    _closing: list[Close] = field(default_factory=list)

    @classmethod
    def build(
        cls,
        cluster: KubernetesApi,
        control_plane: ConnectionSettings,
        unhealthy_after: float,
        *,
        readiness: bool,
    ) -> AgentProbes:
        """Readiness (when asked for) looks at `cluster`'s failing requests and asks the
        apiserver and the control plane on clients of its own: one connection each, no
        retries, so the probe learns at once and never waits behind the agent's work."""
        if not readiness:
            return cls(None)
        asker = KubernetesApi.from_environment(max_in_flight=1, backoff=Backoff(attempts=0))
        ready, closing = probes.build_readiness(
            cluster.health, probes.ask_apiserver(asker), control_plane, unhealthy_after
        )
        return cls(ready, _closing=[*closing, asker.aclose])

    async def alive(self) -> Found:
        stalled = [] if self.agent is None else self.agent.stalled()
        return not stalled, {"stuck": "; ".join(stalled)} if stalled else {}

    async def ready(self) -> Found:
        assert self.readiness is not None  # served only when built
        return await self.readiness.check()

    async def serve(self, liveness: Endpoint | None, readiness: Endpoint | None) -> None:
        """Serves each probe given; `aclose` stops them."""
        for endpoint, check in ((liveness, self.alive), (readiness, self.ready)):
            if endpoint is not None:
                server = ProbeServer(endpoint, check)
                await server.start()
                self._closing.insert(0, server.stop)

    async def aclose(self) -> None:
        for close in self._closing:
            await close()
        self._closing.clear()
