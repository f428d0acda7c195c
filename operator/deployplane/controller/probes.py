"""The operator's two probes, kept apart because they answer different questions.

- Liveness, "is the process stuck?": Kopf's own endpoint (`--liveness URL`, Kopf's health
  reporter running the `kopf.on.probe` handler `handlers.alive`). It is answered from the
  event loop, so a loop that no longer turns (a frozen process, a blocking call) answers
  nothing and the kubelet restarts the container; it fails outright when a task that moves
  the work has ended (`stalled`): a worker of the pool, the event recorder. Kopf's own
  watch tasks need no check here: one that fails stops the operator (the process exits),
  and one that goes silent is reopened by Kopf (`settings.watching.inactivity_timeout`).
  It never looks at the Kubernetes API or the control plane: a liveness probe that fails
  whenever a dependency does restarts a pod that is only waiting for it, and turns an
  outage into a restart storm.
- Readiness, "can it work now?": `--readiness URL`, served (`serving.probes.ProbeServer`,
  over `serving.probes.Readiness`, which the listener agent shares) once the operator's
  runtime is built. It fails (503, saying what it found) while the
  apiserver does not answer `GET /readyz` as ready, while a watch or the operator's own
  requests have been failing for longer than DEPLOYPLANE_UNHEALTHY_AFTER (`FailureClock`),
  or while the control plane of the operator's own connection
  (DEPLOYPLANE_CONTROL_PLANE_URL) does not answer one published read,
  `GET /v2/listeners?limit=1` (no answer, or a 5xx; any other status is an answer: a
  refused key shows on the resources, not here), the read `deployplane version` makes.
  Each is asked on a connection of its own, at most every `serving.probes.RECHECK`
  seconds, within `serving.probes.ANSWER_TIMEOUT`. An unready operator is not
  restarted; its pod only leaves the Service's endpoints (the chart's metrics Service
  publishes it anyway).
"""

from __future__ import annotations

from typing import Protocol

__all__ = ["stalled"]


class Pool(Protocol):
    def ended_workers(self) -> int: ...


class Recorder(Protocol):
    def ended(self) -> bool: ...


def stalled(workers: Pool, events: Recorder) -> list[str]:
    """What has stopped moving the work: liveness fails on any of it."""
    found = []
    ended = workers.ended_workers()
    if ended:
        found.append(f"{ended} worker(s) of the pool ended")
    if events.ended():
        found.append("the event recorder ended")
    return found
