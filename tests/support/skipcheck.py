"""A pytest plugin: no tier of `make test` passes by skipping.

`--skips-allowed=NAME[,NAME...]` (the Makefile gives each tier its own) turns it on:
the run ends with its skips grouped by reason, each said allowed (by which entry of
tests/support/tiers.py, and why) or not, and fails when any test skipped for a reason
outside the named lists, or when no test passed at all. A skip counts wherever it
happens: in a test, in a fixture, by a `skipif` mark, or at collection (a whole module
skipped counts once). Without the option the plugin only registers it, so a developer's
`pytest tests/unit/x` is judged by pytest alone.

Under pytest-xdist the workers only report; the controller, which receives every
worker's reports, judges.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

import pytest
from tests.support.tiers import AllowedSkip, UnknownList, allowed_skips

__all__ = ["SkipCheck", "skip_reason"]

OPTION = "--skips-allowed"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.getgroup("deployplane").addoption(
        OPTION,
        dest="skips_allowed",
        default=None,
        metavar="NAME[,NAME...]",
        help=(
            "fail the run when a test skips for a reason outside these lists of "
            "tests/support/tiers.py (or when no test passed), and list the skips by reason"
        ),
    )


def pytest_configure(config: pytest.Config) -> None:
    names = config.getoption("skips_allowed")
    if not names or hasattr(config, "workerinput"):
        return
    lists = [name.strip() for name in names.split(",") if name.strip()]
    try:
        entries = allowed_skips(lists)
    except UnknownList as e:
        raise pytest.UsageError(str(e)) from None
    config.pluginmanager.register(SkipCheck(lists, entries), "deployplane-skipcheck")


def skip_reason(report: pytest.TestReport | pytest.CollectReport) -> str:
    """The reason a skipped report gives, without pytest's "Skipped: " prefix."""
    longrepr = report.longrepr
    message = str(longrepr[2]) if isinstance(longrepr, tuple) else str(longrepr)
    return message.removeprefix("Skipped: ")


@dataclass(eq=False)  # a plugin object: hashed by identity
class SkipCheck:
    """The skips of one run, judged against the lists it was given."""

    lists: list[str]
    allowed: tuple[AllowedSkip, ...]
    skipped: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))
    passed: int = 0

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.skipped and not hasattr(report, "wasxfail"):
            self.skipped[skip_reason(report)].append(report.nodeid)
        elif report.passed and report.when == "call":
            self.passed += 1

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if report.skipped:
            self.skipped[skip_reason(report)].append(f"{report.nodeid} (at collection)")

    def entry_for(self, reason: str) -> AllowedSkip | None:
        return next((entry for entry in self.allowed if entry.matches(reason)), None)

    def unexpected(self) -> dict[str, list[str]]:
        return {r: ids for r, ids in self.skipped.items() if self.entry_for(r) is None}

    def failure(self) -> str | None:
        """Why the run fails on its skips, None if it does not."""
        unexpected = self.unexpected()
        if unexpected:
            count = sum(len(ids) for ids in unexpected.values())
            return f"{count} skipped outside the allowed lists ({', '.join(self.lists)})"
        if self.passed == 0:
            return "no test passed"
        return None

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if self.failure() is not None and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        write = terminalreporter.write_line
        total = sum(len(ids) for ids in self.skipped.values())
        terminalreporter.section(f"skips, judged by the lists {', '.join(self.lists)}")
        if not total:
            write("nothing skipped")
        for reason, ids in sorted(self.skipped.items(), key=lambda item: -len(item[1])):
            entry = self.entry_for(reason)
            verdict = "allowed" if entry is not None else "NOT ALLOWED"
            write(f"{len(ids):4d} {verdict}: {reason}")
            if entry is not None:
                write(f"       because {entry.why}")
            else:
                for nodeid in sorted(ids):
                    write(f"       {nodeid}")
        failure = self.failure()
        if failure is not None:
            terminalreporter.write_line(f"FAILED on its skips: {failure}", red=True, bold=True)
