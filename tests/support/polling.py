"""Polling for the e2e tests: wait until a probe returns something truthy. The bound
only stops a hang; it asserts no speed."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def wait_until(
    what: str, probe: Callable[[], T | None], within: float = 120.0, interval: float = 0.25
) -> T:
    """`probe()`'s first truthy answer; AssertionError naming `what` and the last answer
    once `within` seconds have passed."""
    deadline = time.monotonic() + within
    last: T | None = None
    while time.monotonic() < deadline:
        last = probe()
        if last:
            return last
        time.sleep(interval)
    raise AssertionError(f"timed out waiting for {what}; last seen: {last!r}"[:3000])
