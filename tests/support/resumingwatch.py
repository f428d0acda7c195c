"""A watch that sees every version of what a test looks at, not samples of it: what the
test reads on entering the context is recorded, then a thread watches from that
resourceVersion until the context exits, in short streams each resumed from the last
version seen, so nothing written between the read and the watch is missed. What failed
in the thread is said on exit, in the test's thread (a failed test keeps its own error).

A subclass says what it lists and watches (`_list`, `_watched`) and what it keeps of an
event (`_record`); it only records, the test asserts.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from types import TracebackType
from typing import Any, Self

from kubernetes import watch

STREAM_SECONDS = 5


class ResumingWatch:
    stream_seconds: float = STREAM_SECONDS
    bookmarks = False
    """Ask for bookmarks: they move the version on while nothing changes, so the next
    stream never starts from one the apiserver has let go of (a long, quiet watch)."""

    def __init__(self, name: str) -> None:
        self.errors: list[BaseException] = []
        self._version = ""
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"watch-{name}", daemon=True)

    def _list(self) -> str:
        """Read and record what is there now; the resourceVersion to watch from."""
        raise NotImplementedError

    def _watched(self) -> tuple[Callable[..., Any], tuple[Any, ...], dict[str, Any]]:
        """The list call the watch streams, its arguments and keyword arguments."""
        raise NotImplementedError

    def _record(self, kind: str, obj: Any) -> str:
        """Keep what the event says (`kind`: ADDED, MODIFIED, DELETED, BOOKMARK); the
        resourceVersion it brings."""
        raise NotImplementedError

    def _close(self) -> None:
        """Called on exit, after the thread has stopped."""

    def __enter__(self) -> Self:
        self._version = self._list()
        self._thread.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self._stop.set()
        self._thread.join(timeout=self.stream_seconds * 3)
        self._close()
        if kind is None:
            assert not self._thread.is_alive(), "the watch did not stop"
            assert not self.errors, f"the watch failed: {self.errors!r}"

    def _run(self) -> None:
        try:
            while not self._stop.is_set():
                call, args, kwargs = self._watched()
                stream = watch.Watch().stream(
                    call,
                    *args,
                    resource_version=self._version,
                    timeout_seconds=self.stream_seconds,
                    allow_watch_bookmarks=self.bookmarks,
                    **kwargs,
                )
                for event in stream:
                    self._version = self._record(event["type"], event["object"])
                    if self._stop.is_set():
                        break
        except BaseException as exc:  # said by __exit__, in the test's thread
            self.errors.append(exc)
