"""`deployplane deployments logs`: --since and the line format (pure parts)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import click
import pytest

from deployplane.api.models import LogEntry, LogLevel
from deployplane.cli.commands.logs import format_line, parse_revision, parse_since

NOW = datetime(2026, 3, 8, 12, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("given", "back"),
    [("30s", timedelta(seconds=30)), ("10m", timedelta(minutes=10)), ("2h", timedelta(hours=2))],
)
def test_since_takes_kubectl_durations(given: str, back: timedelta) -> None:
    assert parse_since(given, NOW) == NOW - back


def test_since_takes_an_rfc3339_time_utc_when_zoneless() -> None:
    assert parse_since("2026-03-08T00:00:00Z", NOW) == datetime(2026, 3, 8, tzinfo=UTC)
    assert parse_since("2026-03-08T00:00:00", NOW) == datetime(2026, 3, 8, tzinfo=UTC)
    assert parse_since(None, NOW) is None


def test_a_bad_since_is_a_usage_error_naming_the_option() -> None:
    with pytest.raises(click.BadParameter, match="RFC 3339"):
        parse_since("yesterday", NOW)


@pytest.mark.parametrize("given", ["99999999999d", "999999d"])
def test_a_since_too_far_back_is_a_usage_error_not_a_traceback(given: str) -> None:
    with pytest.raises(click.BadParameter, match="too far back"):
        parse_since(given, NOW)


def test_a_line_shows_utc_time_level_and_message() -> None:
    entry = LogEntry(id="1", timestamp=1772971200000, level=LogLevel.ERROR, message="Build failed")
    assert format_line(entry) == "2026-03-08T12:00:00Z ERROR   Build failed"


def test_a_revision_that_is_not_an_id_is_a_usage_error() -> None:
    with pytest.raises(click.BadParameter, match="UUID"):
        parse_revision("latest")
    assert parse_revision(None) is None
