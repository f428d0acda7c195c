"""`deployplane deployments logs NAME|ID [--type build|deploy] [-f] [--since]`: a
deployment's build or deploy log, as `kubectl logs` shows a pod's.

Lines are read oldest first, page after page, each page going on after the last line
of the one before (the service's `next_offset`), so no line is shown twice. `-f`
keeps reading new lines until the revision followed (the latest, or `--revision`)
is finished (as `kubectl logs -f` ends with its container), then reads once more.
"""

from __future__ import annotations

import re
import uuid
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from typing import TYPE_CHECKING

import click

from deployplane.cli.commands.connection import (
    EXIT_CODES_HELP,
    ConnectedCommand,
    ExitCode,
    call,
    fail,
)
from deployplane.cli.commands.options import deployment_argument
from deployplane.cli.params import EnumChoice, option

if TYPE_CHECKING:
    from deployplane.api import models
    from deployplane.api.client import ControlPlaneClient

__all__ = ["register"]

_PAGE = 1000
_DURATION = re.compile(r"^(\d+)([smhd])$")
_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days"}


class LogType(StrEnum):
    build = "build"
    deploy = "deploy"


def parse_since(value: str | None, now: datetime) -> datetime | None:
    """`--since`: a duration back from now (`30s`, `10m`, `2h`, `1d`, as kubectl's) or
    an RFC 3339 time; None when not given."""
    if value is None:
        return None
    match = _DURATION.match(value)
    if match:
        try:
            return now - timedelta(**{_UNITS[match.group(2)]: int(match.group(1))})
        except OverflowError:  # more than timedelta holds, or before the year 1
            raise click.BadParameter("too far back", param_hint="--since") from None
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise click.BadParameter(
            "a duration (30s, 10m, 2h, 1d) or an RFC 3339 time", param_hint="--since"
        ) from None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def parse_revision(value: str | None) -> uuid.UUID | None:
    if value is None:
        return None
    try:
        return uuid.UUID(value)
    except ValueError:
        raise click.BadParameter("a revision id (UUID)", param_hint="--revision") from None


def format_line(entry: models.LogEntry) -> str:
    moment = datetime.fromtimestamp(entry.timestamp / 1000, UTC)
    return f"{moment:%Y-%m-%dT%H:%M:%S}Z {entry.level.value:<7} {entry.message}"


async def _deployment(client: ControlPlaneClient, ref: str) -> models.Deployment:
    from deployplane.cli.commands import resolve

    return await client.get_deployment(await resolve.deployment_id(client, ref))


class _Reader:
    """Reads a log from where it stopped (`next_offset`)."""

    def __init__(
        self,
        client: ControlPlaneClient,
        deployment: models.Deployment,
        log_type: LogType,
        revision_id: uuid.UUID | None,
        since: datetime | None,
    ) -> None:
        self.client, self.deployment, self.log_type = client, deployment, log_type
        self.revision_id, self.since = revision_id, since
        self.offset: str | None = None

    async def _page(self) -> models.LogsPage:
        from deployplane.api import models

        query = models.LogsQuery(
            order=models.LogOrder.ASC, limit=_PAGE, offset=self.offset, start_time=self.since
        )
        if self.log_type is LogType.build:
            assert self.revision_id is not None
            return await self.client.get_build_logs(self.deployment.id, self.revision_id, query)
        return await self.client.get_deploy_logs(self.deployment.id, query, self.revision_id)

    async def drain(self) -> None:
        """Prints every line not printed yet."""
        while True:
            page = await self._page()
            for entry in page.logs:
                click.echo(format_line(entry))
            self.offset = page.next_offset or self.offset
            if len(page.logs) < _PAGE:
                return

    async def finished(self) -> bool:
        revision_id = self.revision_id
        if revision_id is None:
            latest = await self.client.get_deployment(self.deployment.id)
            if latest.latest_revision_id is None:
                return False
            revision_id = latest.latest_revision_id
        revision = await self.client.get_revision(self.deployment.id, revision_id)
        return revision.status.is_terminal


def register(group: click.Group) -> None:
    """Adds `logs` to the `deployments` command group."""

    @group.command("logs", cls=ConnectedCommand, epilog=EXIT_CODES_HELP)
    @deployment_argument
    @option(
        "--type",
        "log_type",
        type=EnumChoice(LogType, case_sensitive=True),
        default=LogType.deploy.value,
        help="Which log: build (a remote build's) or deploy.",
    )
    @option("--revision", help="Revision id (build logs: default the latest).")
    @option("--follow", "-f", is_flag=True, help="Keep printing new lines until done.")
    @option("--since", help="Only newer lines: 30s, 10m, 2h, 1d or RFC 3339.")
    @option(
        "--poll-interval",
        type=click.FloatRange(min=0.1),
        default=2.0,
        help="Seconds between reads (-f).",
    )
    def deployment_logs(
        ref: str,
        log_type: LogType,
        revision: str | None,
        follow: bool,
        since: str | None,
        poll_interval: float,
    ) -> None:
        """Print a deployment's build or deploy log, oldest line first.

        With -f, keep printing new lines until the revision is finished (DEPLOYED or
        failed), like `kubectl logs -f`; Ctrl-C stops earlier.
        """
        import asyncio

        start = parse_since(since, datetime.now(UTC))
        given_revision = parse_revision(revision)

        async def action(client: ControlPlaneClient) -> None:
            found = await _deployment(client, ref)
            revision_id = given_revision
            if log_type is LogType.build and revision_id is None:
                if found.latest_revision_id is None:
                    fail(f"deployment {found.name} has no revision yet", ExitCode.API_ERROR)
                revision_id = found.latest_revision_id
            reader = _Reader(client, found, log_type, revision_id, start)
            await reader.drain()
            while follow and not await reader.finished():
                await asyncio.sleep(poll_interval)
                await reader.drain()
            if follow:
                await reader.drain()  # what the last stage wrote as it ended

        try:
            call(action)
        except KeyboardInterrupt:
            raise click.exceptions.Exit(130) from None
