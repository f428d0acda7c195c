"""When to send a failed Kubernetes request again: pure, unit-tested without a server.

- 401: the credentials expired (a rotated service-account token, an exec plugin's or
  OIDC token): log in again and send once more (the caller's job; `retryable` says no);
- 429 and 5xx, or no answer at all: wait and send again, at most `attempts` times.
  The wait is the server's `Retry-After` when it gives one (it knows its load best),
  else an exponential backoff; either way with jitter, so 1,000 resources refused at
  once do not come back in the same millisecond;
- anything else is the caller's to judge (404, 409, 422 ...).
"""

from __future__ import annotations

import email.utils
import math
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field


def retryable(status: int) -> bool:
    """No answer (0), 429 Too Many Requests, or a server error."""
    return status == 0 or status == 429 or status >= 500


def parse_retry_after(value: str | None, *, now: Callable[[], float] = time.time) -> float | None:
    """Seconds to wait from a `Retry-After` header: delta-seconds or an HTTP date
    (RFC 9110 10.2.3); None when absent or unreadable."""
    if not value:
        return None
    value = value.strip()
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        seconds = when.timestamp() - now()
    if not math.isfinite(seconds):
        return None
    return max(0.0, seconds)


@dataclass(frozen=True)
class Backoff:
    """Exponential backoff with jitter: attempt n waits `initial * 2**n` (at most
    `maximum`), stretched by up to `jitter` (0.2: up to 20% longer), never shorter
    than the server asked."""

    initial: float = 0.5
    maximum: float = 30.0
    jitter: float = 0.2
    attempts: int = 5
    """How many times one request is sent again before its error goes to the caller."""
    rand: Callable[[], float] = field(default=random.random, compare=False)

    def delay(self, attempt: int, retry_after: float | None = None) -> float:
        base = min(self.maximum, self.initial * 2.0**attempt)
        if retry_after is not None:
            # The server's word is the floor; the jitter only spreads the herd after it.
            base = retry_after
        return base * (1.0 + self.jitter * self.rand())
