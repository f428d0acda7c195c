"""`deployments wait`: follow a revision to a terminal status with a live status line.

The status line (spinner, revision status, elapsed time) is drawn on stderr and
re-rendered by rich several times a second, so the elapsed time keeps moving between
polls; each status change is also printed as a permanent line, leaving a log of the
rollout. The final revision goes to stdout in the chosen format, so
`deployplane deployments wait ID -o json | jq` stays scriptable.
"""

from __future__ import annotations

import time

from rich.console import Console, RenderableType
from rich.live import Live
from rich.spinner import Spinner
from rich.text import Text

from deployplane.api import errors
from deployplane.api.client import ControlPlaneClient
from deployplane.api.models import Revision, RevisionStatus

__all__ = ["StatusLine", "follow_revision", "wait_deleted"]


class StatusLine:
    """A renderable whose text is computed at render time: the elapsed time stays live."""

    def __init__(self, label: str) -> None:
        self.label = label
        self.status = "looking up"
        self.started = time.monotonic()
        self._spinner = Spinner("dots")

    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def text(self) -> Text:
        return Text.assemble(
            (f"{self.label}: ", "bold"), (self.status, "cyan"), f"  {self.elapsed():.0f}s"
        )

    def __rich__(self) -> RenderableType:
        self._spinner.update(text=self.text())
        return self._spinner


async def follow_revision(
    client: ControlPlaneClient,
    deployment_id: str,
    revision_id: str,
    *,
    timeout: float | None,  # noqa: ASYNC109  (passed on to wait_for_revision)
    poll_interval: float,
    console: Console,
) -> Revision:
    """Wait for the revision to be terminal while showing its status; return it."""
    line = StatusLine(f"revision {revision_id}")

    def on_change(revision: Revision) -> None:
        line.status = revision.status.value
        style = _style(revision.status)
        console.print(Text.assemble(f"{line.elapsed():>5.0f}s  ", (revision.status.value, style)))

    # transient: the live line disappears at the end; the change log above it stays.
    with Live(line, console=console, refresh_per_second=8, transient=True):
        return await client.wait_for_revision(
            deployment_id,
            revision_id,
            poll_interval=poll_interval,
            timeout=timeout,
            on_change=on_change,
        )


def _style(status: RevisionStatus) -> str:
    if status is RevisionStatus.DEPLOYED:
        return "green"
    if status.is_terminal:
        return "red"
    return "cyan"


async def wait_deleted(
    client: ControlPlaneClient,
    deployment_id: str,
    *,
    timeout: float | None,  # noqa: ASYNC109  (measured on the client's clock)
    poll_interval: float = 2.0,
) -> None:
    """Poll the deployment until the service answers 404 (deletion is asynchronous:
    AWAITING_DELETE first); `TimeoutError` after `timeout` seconds."""
    deadline = None if timeout is None else client.clock() + timeout
    interval = poll_interval
    while True:
        try:
            deployment = await client.get_deployment(deployment_id)
        except errors.NotFound:
            return
        if deadline is not None and client.clock() >= deadline:
            raise TimeoutError(
                f"deployment {deployment_id} still {deployment.status.value} after {timeout:g}s"
            )
        await client.sleep(interval)
        interval = min(interval * 2, 30.0)
