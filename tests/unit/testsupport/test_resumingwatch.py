"""tests/support/resumingwatch.py: every stream resumes from the last version seen,
starting at the one listed on entry, and what failed in the thread is said on exit."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from tests.support import resumingwatch
from tests.support.resumingwatch import ResumingWatch


class Recorded(ResumingWatch):
    stream_seconds = 0.05

    def __init__(self) -> None:
        super().__init__("recorded")
        self.seen: list[tuple[str, str]] = []

    def _list(self) -> str:
        return "10"

    def _watched(self) -> tuple[Callable[..., Any], tuple[Any, ...], dict[str, Any]]:
        return print, ("ns",), {"field_selector": "metadata.name=x"}

    def _record(self, kind: str, obj: Any) -> str:
        self.seen.append((kind, obj))
        return str(obj)


class Streams:
    """A stand-in for `kubernetes.watch.Watch`: hands out `batches` one stream each,
    noting the version each asked from, then empty streams."""

    def __init__(self, batches: list[list[tuple[str, str]]], fail: bool = False) -> None:
        self.batches, self.fail = batches, fail
        self.asked: list[str] = []
        self.drained = threading.Event()

    def __call__(self) -> Streams:
        return self

    def stream(self, call: Any, *args: Any, resource_version: str, **kwargs: Any) -> Iterator[Any]:
        self.asked.append(resource_version)
        if self.fail:
            self.drained.set()
            raise RuntimeError("the apiserver went away")
        if not self.batches:
            self.drained.set()
        for kind, version in self.batches.pop(0) if self.batches else []:
            yield {"type": kind, "object": version}


def test_each_stream_resumes_from_the_last_version_seen(monkeypatch: pytest.MonkeyPatch) -> None:
    streams = Streams([[("ADDED", "11"), ("MODIFIED", "12")], [("BOOKMARK", "15")]])
    monkeypatch.setattr(resumingwatch.watch, "Watch", streams)
    with Recorded() as watched:
        assert streams.drained.wait(5)
    assert watched.seen == [("ADDED", "11"), ("MODIFIED", "12"), ("BOOKMARK", "15")]
    assert streams.asked[:3] == ["10", "12", "15"]


def test_a_failure_in_the_thread_is_said_on_exit(monkeypatch: pytest.MonkeyPatch) -> None:
    streams = Streams([], fail=True)
    monkeypatch.setattr(resumingwatch.watch, "Watch", streams)
    with pytest.raises(AssertionError, match="the apiserver went away"), Recorded():
        assert streams.drained.wait(5)
