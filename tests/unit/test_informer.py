"""The informer: list in pages, then watch from the list's resourceVersion; resume a
watch that ends from the last version seen (bookmarks included); list again after 410
Gone or an error event, reporting what vanished meanwhile as DELETED; retry a failed
list with a growing backoff. No Kubernetes: a scripted source."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

from deployplane.reconcile.informer import Informer, Page, WatchExpired

NS = "team-a"


def obj(name: str, rv: str, **extra: Any) -> dict[str, Any]:
    return {
        "apiVersion": "deployplane.io/v1alpha1",
        "kind": "AgentDeployment",
        "metadata": {"namespace": NS, "name": name, "resourceVersion": rv, **extra},
        "spec": {},
    }


class Script:
    """Answers list pages and watch streams from queues the test fills; records calls.
    A watch stream item that is an exception is raised; `None` ends the stream."""

    def __init__(self) -> None:
        self.lists: list[Page | BaseException] = []
        self.watches: list[list[dict[str, Any] | BaseException | None]] = []
        self.calls: list[tuple[Any, ...]] = []
        self.exhausted = asyncio.Event()

    async def list_page(
        self, plural: str, namespace: str | None, *, limit: int, continue_token: str | None
    ) -> Page:
        self.calls.append(("list", plural, namespace, limit, continue_token))
        if not self.lists:
            self.exhausted.set()
            await asyncio.Event().wait()  # nothing more scripted: hang until cancelled
        answer = self.lists.pop(0)
        if isinstance(answer, BaseException):
            raise answer
        return answer

    async def watch_events(
        self, plural: str, namespace: str | None, *, resource_version: str, timeout_seconds: int
    ) -> AsyncIterator[dict[str, Any]]:
        self.calls.append(("watch", resource_version, timeout_seconds))
        if not self.watches:
            self.exhausted.set()
            await asyncio.Event().wait()
        for item in self.watches.pop(0):
            if item is None:
                return
            if isinstance(item, BaseException):
                raise item
            yield item


async def run_until_exhausted(informer: Informer, script: Script) -> None:
    task = asyncio.create_task(informer.run())
    await asyncio.wait_for(script.exhausted.wait(), 5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


def rig(
    script: Script, **kwargs: Any
) -> tuple[Informer, list[tuple[str | None, str]], list[float]]:
    seen: list[tuple[str | None, str]] = []
    slept: list[float] = []

    async def sleep(seconds: float) -> None:
        slept.append(seconds)

    informer = Informer(
        script,
        "agentdeployments",
        NS,
        lambda kind, body: seen.append((kind, body["metadata"]["name"])),
        sleep=sleep,
        **kwargs,
    )
    return informer, seen, slept


async def test_it_lists_in_pages_then_watches_from_the_lists_version() -> None:
    script = Script()
    script.lists = [Page([obj("a", "5")], "9", "next"), Page([obj("b", "7")], "10", None)]
    script.watches = [[{"type": "ADDED", "object": obj("c", "11")}]]
    informer, seen, _ = rig(script, page_size=1)
    await run_until_exhausted(informer, script)
    assert seen == [(None, "a"), (None, "b"), ("ADDED", "c")]
    assert script.calls[:3] == [
        ("list", "agentdeployments", NS, 1, None),
        ("list", "agentdeployments", NS, 1, "next"),
        ("watch", "10", 300),
    ]
    assert informer.listed.is_set()


async def test_an_ended_stream_resumes_from_the_last_version_seen_bookmarks_included() -> None:
    script = Script()
    script.lists = [Page([], "1", None)]
    script.watches = [
        [{"type": "MODIFIED", "object": obj("a", "4")}, None],
        [{"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": "8"}}}, None],
        [{"type": "DELETED", "object": obj("a", "9")}],
    ]
    informer, seen, _ = rig(script)
    await run_until_exhausted(informer, script)
    watched_from = [c[1] for c in script.calls if c[0] == "watch"]
    assert watched_from == ["1", "4", "8", "9"]
    assert seen == [("MODIFIED", "a"), ("DELETED", "a")], "a bookmark is not an object"
    assert [c[0] for c in script.calls].count("list") == 1, "no listing again"


async def test_gone_lists_again_and_reports_what_vanished_meanwhile_as_deleted() -> None:
    script = Script()
    script.lists = [
        Page([obj("a", "1"), obj("b", "2")], "2", None),
        Page([obj("b", "6"), obj("c", "7")], "7", None),
    ]
    script.watches = [[{"type": "ERROR", "object": {"code": 410, "reason": "Expired"}}]]
    informer, seen, slept = rig(script)
    await run_until_exhausted(informer, script)
    assert seen == [(None, "a"), (None, "b"), (None, "b"), (None, "c"), ("DELETED", "a")]
    assert set(informer.known) == {(NS, "b"), (NS, "c")}
    assert slept == [], "a 410 is routine: listed again at once"


async def test_a_410_answer_to_the_watch_request_lists_again_too() -> None:
    script = Script()
    script.lists = [Page([obj("a", "1")], "1", None), Page([], "5", None)]
    script.watches = [[WatchExpired("too old")]]
    informer, seen, _ = rig(script)
    await run_until_exhausted(informer, script)
    assert seen == [(None, "a"), ("DELETED", "a")]


async def test_a_failed_list_is_retried_with_a_growing_backoff(
    caplog: pytest.LogCaptureFixture,
) -> None:
    script = Script()
    script.lists = [
        RuntimeError("404: the CRD is not installed"),
        RuntimeError("403: forbidden"),
        RuntimeError("connection refused"),
        Page([obj("a", "1")], "1", None),
    ]
    script.watches = [[None]]
    informer, seen, slept = rig(script, backoff_initial=1.0, backoff_max=3.0)
    await run_until_exhausted(informer, script)
    assert slept == [1.0, 2.0, 3.0], "doubling up to the max"
    assert seen == [(None, "a")]
    assert "list failed (404: the CRD is not installed)" in caplog.text


async def test_a_broken_stream_resumes_from_its_last_version_after_a_backoff(
    caplog: pytest.LogCaptureFixture,
) -> None:
    script = Script()
    script.lists = [Page([], "1", None)]
    script.watches = [
        [{"type": "ADDED", "object": obj("a", "3")}, ConnectionResetError("dropped")],
        [ConnectionResetError("dropped again")],
        [None],  # a clean end: the backoff starts over
        [ConnectionResetError("and again")],
    ]
    informer, seen, slept = rig(script)
    await run_until_exhausted(informer, script)
    assert [c[1] for c in script.calls if c[0] == "watch"] == ["1", "3", "3", "3", "3"]
    assert slept == [1.0, 2.0, 1.0]
    assert [c[0] for c in script.calls].count("list") == 1
    assert seen == [("ADDED", "a")]
    assert "watch failed (dropped)" in caplog.text


async def test_an_object_the_consumer_cannot_take_does_not_stop_the_stream() -> None:
    script = Script()
    script.lists = [Page([obj("bad", "1"), obj("good", "2")], "2", None)]
    seen: list[str] = []

    def observe(kind: str | None, body: Any) -> None:
        if body["metadata"]["name"] == "bad":
            raise KeyError("namespace")
        seen.append(body["metadata"]["name"])

    informer = Informer(script, "agentdeployments", None, observe)
    assert informer.where == "cluster-wide"
    await run_until_exhausted(informer, script)
    assert seen == ["good"]


async def test_an_error_event_other_than_gone_lists_again_after_a_backoff(
    caplog: pytest.LogCaptureFixture,
) -> None:
    script = Script()
    script.lists = [Page([obj("a", "1")], "1", None), Page([obj("a", "1")], "5", None)]
    error = {"type": "ERROR", "object": {"code": 500, "message": "etcd is unhappy"}}
    script.watches = [[error]]
    informer, seen, slept = rig(script)
    await run_until_exhausted(informer, script)
    assert slept == [1.0], "never a tight list-watch loop on a failing server"
    assert [c[0] for c in script.calls] == ["list", "watch", "list", "watch"]
    assert seen == [(None, "a"), (None, "a")]
    assert "watch failed (watch error 500: etcd is unhappy)" in caplog.text
