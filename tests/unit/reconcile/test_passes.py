"""PassRunner.one_pass over the function-adapter fake, the status merge patch, and the
operator's environment configuration. No emulator, no Kubernetes."""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, cast

import pytest
from tests.support.fakeexternal import (
    DEP_ID,
    ConnecterFns,
    ExternalFns,
    FakeSpec,
    FakeStatus,
    observed,
    raises,
    returns,
)

from deployplane.api import errors
from deployplane.controller.config import OperatorConfig
from deployplane.externals.agentdeployment import AgentDeploymentReason as Reason
from deployplane.externals.connections import Connection
from deployplane.kinds.agentdeployment.spec import AgentDeploymentSpec
from deployplane.reconcile.errors import ExternalError
from deployplane.reconcile.external import DependencyNotReady, Phase
from deployplane.reconcile.finalizer import (
    DELETE_POLL_SECONDS,
    DELETE_RETRY_SECONDS,
    FINALIZER,
    NotYet,
)
from deployplane.reconcile.marker import CREATE_PENDING_ANNOTATION, EXTERNAL_NAME_ANNOTATION
from deployplane.reconcile.mergepatch import apply_merge_patch, merge_patch
from deployplane.reconcile.outcome import EventRecord
from deployplane.reconcile.passes import PassRunner
from deployplane.reconcile.reconciler import Reconciler
from deployplane.reconcile.resourcestate import ResourceState, is_paused
from deployplane.reconcile.schedule import Schedule
from deployplane.serving.config import ConfigError

NS = "team-a"
TIMING = Schedule()
PROGRESSING = observed(phase=Phase.PROGRESSING, reason=Reason.REVISION_IN_PROGRESS)


@dataclass
class Sink:
    """A StatusSink that records every status patch and every patch of the object."""

    writes: list[dict[str, Any]] = field(default_factory=list)
    objects: list[dict[str, Any]] = field(default_factory=list)
    order: list[str] = field(default_factory=list)
    """"status" or "object", per write, in the order they were sent."""
    gone: bool = False
    held: dict[str, Any] | None = None
    """The status the apiserver holds (the first pass's body's, then patched)."""
    fail_status: bool = False

    async def patch_status(self, plural: str, namespace: str, name: str, patch: Any) -> bool:
        assert (plural, namespace, name) == ("agentdeployments", NS, "agent")
        if self.fail_status:
            raise RuntimeError("the apiserver timed out")
        self.writes.append(copy.deepcopy(dict(patch)))
        self.order.append("status")
        self.held = apply_merge_patch(self.held or {}, patch)
        return True

    async def patch_object(
        self,
        plural: str,
        namespace: str,
        name: str,
        patch: Any,
        *,
        add_finalizer: str | None = None,
        finalizers: list[str] | None = None,
        resource_version: str | None = None,
        guard: Callable[[Mapping[str, Any]], bool] | None = None,
    ) -> bool:
        """Records the merge patch the API would send (the finalizer folded in); the
        object is the body the pass read (the writer tests `guard` against it)."""
        assert (plural, namespace, name) == ("agentdeployments", NS, "agent")
        self.objects.append(with_finalizer(patch, add_finalizer, finalizers))
        self.order.append("object")
        return not self.gone


def with_finalizer(
    patch: Any, add_finalizer: str | None, finalizers: list[str] | None
) -> dict[str, Any]:
    out = copy.deepcopy(dict(patch))
    if add_finalizer is not None:
        out.setdefault("metadata", {})["finalizers"] = [*(finalizers or []), add_finalizer]
    return out


def body(
    generation: int = 1,
    spec: dict[str, Any] | None = None,
    annotations: dict[str, str] | None = None,
    status: dict[str, Any] | None = None,
) -> dict[str, Any]:
    return {
        "metadata": {
            "namespace": NS,
            "name": "agent",
            "uid": "uid-1",
            "generation": generation,
            "resourceVersion": "7",
            "annotations": annotations or {},
        },
        "spec": spec or {},
        "status": status or {},
    }


def seen(**kwargs: Any) -> tuple[dict[str, Any], ResourceState]:
    """A body carrying our finalizer (`body(**kwargs)`), and a state that has seen it
    (first sight: the marker read from the object)."""
    b = body(**kwargs)
    b["metadata"]["finalizers"] = [FINALIZER]
    state = ResourceState()
    state.seed(b)
    return b, state


@dataclass
class Rig:
    ext: ExternalFns = field(default_factory=ExternalFns)
    sink: Sink = field(default_factory=Sink)
    events: list[EventRecord] = field(default_factory=list)
    spec_model: type[Any] = FakeSpec
    gone: list[str] = field(default_factory=list)

    def runner(self) -> PassRunner[Any, Any]:
        reconciler = Reconciler(ConnecterFns(self.ext), kind="deployment", schedule=TIMING)
        return PassRunner(
            cast(Reconciler[Any, Any], reconciler),
            self.spec_model,
            "agentdeployments",
            self.sink,
            status_model=FakeStatus,
            on_gone=self.gone.append,
        )

    async def one_pass(self, state: ResourceState, b: dict[str, Any] | None = None) -> float | None:
        """One pass over `b`; by default, the body the watch shows once it has caught up
        with every write (the status the apiserver holds). Its Result's requeue delay."""
        b = b if b is not None else body(status=self.sink.held)
        if self.sink.held is None:
            self.sink.held = dict(b.get("status") or {})
        if state.status is None:
            state.status = dict(b.get("status") or {})
        result = await self.runner().one_pass(b, state, post_event=self.events.append)
        return result.requeue_after

    def observes(self) -> list[tuple[Any, ...]]:
        return [c for c in self.ext.journal if c[0] == "observe"]


# --------------------------------------------------------------------- pause


@pytest.mark.parametrize(
    ("value", "paused"),
    [("true", True), ("True", True), ("TRUE", True), ("false", False), ("", False), (None, False)],
)
async def test_paused_annotation_stops_reconciling(value: str | None, paused: bool) -> None:
    rig = Rig()
    annotations = {} if value is None else {"deployplane.io/paused": value}
    state = ResourceState()
    delay = await rig.one_pass(state, body(annotations=annotations))
    assert is_paused(body(annotations=annotations)) is paused
    got = {"reconciled": bool(rig.ext.journal), "writes": bool(rig.sink.writes)}
    assert got == {"reconciled": not paused, "writes": not paused}
    if paused:
        assert (delay, state.history.seen) == (TIMING.resync, (1, True, None, None))


# ---------------------------------------------------------------- status writes


async def test_create_pass_writes_marker_with_finalizer_then_id_with_conditions() -> None:
    """Two writes for a create pass: our finalizer and the marker (the external-name
    annotation) in one patch of the object before the call (crash safety), then the id
    and the first conditions together in the status (one write, one watch event). The
    marker stays on: the recorded id supersedes it, and taking it off would cost a
    third write (the Ready status is the third of a created resource's three)."""
    rig = Rig()
    state = ResourceState()
    await rig.one_pass(state)
    (marker,) = rig.sink.objects
    written = marker["metadata"]["annotations"][CREATE_PENDING_ANNOTATION]
    assert marker == {
        "metadata": {
            "annotations": {EXTERNAL_NAME_ANNOTATION: "agent", CREATE_PENDING_ANNOTATION: written},
            "finalizers": [FINALIZER],
        }
    }
    assert rig.sink.order == ["object", "status"]
    assert state.marker is not None
    assert state.marker.requested_at is not None
    assert written == state.marker.requested_at.strftime("%Y-%m-%dT%H:%M:%SZ")
    assert rig.ext.journal.index(("create",)) > 0
    (final,) = rig.sink.writes
    assert final["deploymentId"] == "dep-new"
    assert "createPending" not in final
    assert {"observedGeneration", "conditions"} <= set(final)
    assert state.status is not None
    assert state.status["deploymentId"] == "dep-new"
    assert "createPending" not in state.status


async def test_the_marker_counts_while_the_id_is_not_in_the_status() -> None:
    """A status write that fails after the create: the marker is the only record that a
    create happened; the next pass looks the id up by its natural key and records it,
    writing nothing to the object (the marker is there already, and stays)."""
    rig = Rig(ext=ExternalFns(find_fn=returns("dep-new")))
    state = ResourceState()
    rig.sink.fail_status = True
    with pytest.raises(RuntimeError):
        await rig.one_pass(state)
    (marker,) = rig.sink.objects
    assert marker["metadata"]["annotations"][EXTERNAL_NAME_ANNOTATION] == "agent"
    assert CREATE_PENDING_ANNOTATION in marker["metadata"]["annotations"]
    assert state.marker is not None
    rig.sink.fail_status = False
    await rig.one_pass(state)
    assert [c for c in rig.ext.journal if c[0] in ("create", "find")] == [("create",), ("find",)]
    assert rig.sink.order == ["object", "status"]
    assert state.status is not None
    assert state.status["deploymentId"] == "dep-new"


async def test_a_marker_keeps_the_time_of_the_first_create_call_under_its_key() -> None:
    """A create whose answer never came (a timeout): the next pass creates again under
    the same key, and the marker still says when the first call was made (what a
    deployment found under the key is judged by), with no write to the object."""
    timeout = errors.Unavailable("timed out", method="POST", path="/v2/deployments")
    rig = Rig(ext=ExternalFns(create_fn=raises(timeout)))
    state = ResourceState()
    await rig.one_pass(state)
    assert state.marker is not None
    first = state.marker.requested_at
    assert first is not None
    state.marker = dataclasses.replace(state.marker, requested_at=first - timedelta(hours=1))
    await rig.one_pass(state)
    assert [c for c in rig.ext.journal if c[0] in ("create", "find")] == [
        ("create",),
        ("find",),
        ("create",),
    ]
    assert len(rig.sink.objects) == 1  # the first pass's marker only
    assert state.marker.requested_at == first - timedelta(hours=1)


def gone_then(external_id: str, full: bool) -> Any:
    """The recorded deployment no longer exists on the control plane."""
    return dataclasses.replace(observed(external_id), exists=False)


async def test_the_marker_is_written_before_the_create_call() -> None:
    rig = Rig()
    order: list[str] = []
    create = rig.ext.create_fn
    rig.ext.create_fn = lambda: (order.append(f"create after {len(rig.sink.objects)}"), create())[1]
    await rig.one_pass(ResourceState())
    assert order == ["create after 1"]


async def test_a_recorded_id_supersedes_the_marker() -> None:
    """The marker on a resource whose status records the id says nothing: the pass
    neither looks the name up nor writes to the object."""
    rig = Rig(ext=ExternalFns(find_fn=returns("someone-elses")))
    marked, state = seen(
        annotations={EXTERNAL_NAME_ANNOTATION: "agent"}, status={"deploymentId": DEP_ID}
    )
    await rig.one_pass(state, marked)
    assert ("find",) not in rig.ext.journal
    assert rig.sink.objects == []


async def test_a_re_create_after_the_deployment_vanished_needs_no_marker_write() -> None:
    """The recorded deployment is gone: the id is forgotten (durably) and the resource
    created again under the same key; the marker already on the object covers it."""
    rig = Rig(ext=ExternalFns(observe_fn=gone_then))
    marked, state = seen(
        annotations={EXTERNAL_NAME_ANNOTATION: "agent"}, status={"deploymentId": DEP_ID}
    )
    await rig.one_pass(state, marked)
    assert ("create",) in rig.ext.journal
    assert ("find",) not in rig.ext.journal
    assert rig.sink.objects == []
    assert rig.sink.writes[0]["deploymentId"] is None
    assert state.status is not None
    assert state.status["deploymentId"] == "dep-new"


UNMARKED = {EXTERNAL_NAME_ANNOTATION: None, CREATE_PENDING_ANNOTATION: None}


async def test_a_stale_marker_never_adopts_a_name_someone_else_took() -> None:
    """The recorded deployment is gone and its name now someone else's (the create is
    refused): the marker, written for the earlier create, does not make the pass adopt
    theirs. It stalls on the conflict and the marker comes off."""
    conflict = errors.Conflict("taken", method="POST", path="/v2/deployments", status_code=409)
    ext = ExternalFns(observe_fn=gone_then, find_fn=returns("someone-elses"))
    ext.create_fn = raises(conflict)
    rig = Rig(ext=ext)
    marked, state = seen(
        annotations={EXTERNAL_NAME_ANNOTATION: "agent"}, status={"deploymentId": DEP_ID}
    )
    await rig.one_pass(state, marked)
    assert rig.sink.objects == [{"metadata": {"annotations": UNMARKED}}]
    assert state.status is not None
    assert not state.status.get("deploymentId")
    assert state.marker is None


async def test_a_marker_on_the_object_without_an_id_looks_up_before_creating() -> None:
    """Written by a pass that died before recording the id (or a status lost in a
    restore, which keeps metadata only): the next process finds and adopts instead of
    creating twice, and writes only the status."""
    rig = Rig(ext=ExternalFns(find_fn=returns(DEP_ID)))
    marked, state = seen(annotations={EXTERNAL_NAME_ANNOTATION: "agent"})
    await rig.one_pass(state, marked)
    assert ("create",) not in rig.ext.journal
    assert ("find",) in rig.ext.journal
    assert rig.sink.objects == []
    assert rig.sink.order == ["status"]
    assert rig.sink.writes[0]["deploymentId"] == DEP_ID
    assert state.status is not None
    assert state.status["deploymentId"] == DEP_ID


async def test_a_refused_create_takes_the_marker_off_the_object() -> None:
    """The name is someone else's: the marker must not make a later pass adopt theirs."""
    conflict = errors.Conflict("taken", method="POST", path="/v2/deployments", status_code=409)
    rig = Rig(ext=ExternalFns(create_fn=raises(conflict)))
    state = ResourceState()
    await rig.one_pass(state)
    marked, cleared = rig.sink.objects
    assert EXTERNAL_NAME_ANNOTATION in marked["metadata"]["annotations"]
    assert cleared == {"metadata": {"annotations": UNMARKED}}
    assert state.marker is None


async def test_a_resource_deleted_before_the_marker_is_never_created() -> None:
    rig = Rig()
    rig.sink.gone = True
    await rig.one_pass(ResourceState())
    assert ("create",) not in rig.ext.journal


async def test_steady_state_writes_nothing() -> None:
    rig = Rig()
    state = ResourceState()
    await rig.one_pass(state, body(status={"deploymentId": DEP_ID}))
    assert len(rig.sink.writes) == 1
    for _ in range(3):
        delay = await rig.one_pass(state)
        assert delay == TIMING.resync
    assert len(rig.sink.writes) == 1
    assert [e.reason for e in rig.events] == ["Deployed"]


async def test_stale_status_in_the_body_never_drives_a_decision() -> None:
    """The watch may lag behind our own writes: the pass trusts what it wrote."""
    rig = Rig(ext=ExternalFns(observe_fn=returns(PROGRESSING)))
    state = ResourceState()
    await rig.one_pass(state)  # creates dep-new
    await rig.one_pass(state, body(status={}))  # a body from before the create
    assert [c for c in rig.ext.journal if c[0] in ("create", "observe")] == [
        ("create",),
        ("observe", "dep-new", False),
    ]


async def test_a_status_wiped_by_hand_is_repaired_even_before_our_write_is_seen() -> None:
    """While the watch still shows what our write was computed against, the pass trusts
    its write (no write); a status that was never ours (wiped by hand) is the truth at
    once, and the pass writes it all back."""
    rig = Rig()
    state = ResourceState()
    await rig.one_pass(state, body(status={"deploymentId": DEP_ID}))
    written = copy.deepcopy(rig.sink.held)
    rig.sink.writes.clear()
    await rig.one_pass(state, body(status={"deploymentId": DEP_ID}))  # the watch behind
    assert rig.sink.writes == []
    rig.sink.held = {}
    await rig.one_pass(state, body(status={}))  # wiped by hand
    assert rig.sink.held == written
    assert len(rig.sink.writes) == 1


async def test_a_status_write_that_failed_is_not_taken_for_ours() -> None:
    """Announced as ours before it was sent; failed, it is forgotten: the next pass
    writes it again instead of believing the apiserver holds it."""
    rig = Rig()
    state = ResourceState()
    rig.sink.fail_status = True
    with pytest.raises(RuntimeError):
        await rig.one_pass(state, body(status={"deploymentId": DEP_ID}))
    assert state.status == {"deploymentId": DEP_ID}
    assert state.echoes == []
    rig.sink.fail_status = False
    await rig.one_pass(state, body(status={"deploymentId": DEP_ID}))
    assert rig.sink.held is not None
    assert "conditions" in rig.sink.held


@pytest.mark.parametrize(
    ("observation", "want"),
    [
        (
            observed(latestRevisionId="rev-1", imageVersion="1"),
            {},
        ),
        (
            observed(latestRevisionId="rev-2", imageVersion="1"),
            {"latestRevisionId": "rev-2"},
        ),
        (
            observed(latestRevisionId="rev-1", imageVersion=None),
            {"imageVersion": None},
        ),
    ],
    ids=["nothing new: no write", "one field changed", "one field cleared"],
)
async def test_status_write_is_the_minimal_merge_patch(
    observation: Any, want: dict[str, Any]
) -> None:
    rig = Rig(
        ext=ExternalFns(observe_fn=returns(observed(latestRevisionId="rev-1", imageVersion="1")))
    )
    state = ResourceState()
    await rig.one_pass(state, body(status={"deploymentId": DEP_ID}))
    rig.sink.writes.clear()
    rig.ext.observe_fn = returns(observation)
    await rig.one_pass(state)
    assert rig.sink.writes == ([want] if want else [])


async def test_a_flip_writes_the_conditions_and_nothing_else() -> None:
    rig = Rig()
    state = ResourceState()
    await rig.one_pass(state, body(status={"deploymentId": DEP_ID}))
    before = copy.deepcopy(state.status)
    assert before is not None
    rig.sink.writes.clear()
    rig.ext.observe_fn = returns(PROGRESSING)
    await rig.one_pass(state, body(generation=2, status=rig.sink.held))
    (patch,) = rig.sink.writes
    assert set(patch) == {"observedGeneration", "conditions"}
    assert state.status == apply_merge_patch(before, patch)


# ---------------------------------------------------------------- invalid spec


@pytest.mark.parametrize(
    ("spec", "want_in_message"),
    [
        ({"source": "bogus"}, "spec.source: Input should be 'git_host' or 'external_docker'"),
        ({}, "spec.source: Field required"),
        (
            {"source": "external_docker", "sourceConfig": {"resourceSpec": {"minScale": -1}}},
            "spec.sourceConfig.resourceSpec.minScale: Input should be greater than or equal to 0",
        ),
        (
            {"source": "external_docker", "secrets": [{"name": "OPENAI"}]},
            "spec.secrets.0.valueFrom: Field required",
        ),
    ],
    ids=["bad enum", "missing field", "nested bound", "missing nested field (camelCase)"],
)
async def test_invalid_spec_stalls_with_the_field_named(
    spec: dict[str, Any], want_in_message: str
) -> None:
    rig = Rig(spec_model=AgentDeploymentSpec)
    state = ResourceState()
    delay = await rig.one_pass(state, body(spec=spec, status={"deploymentId": DEP_ID}))
    assert state.status is not None
    conds = {c["type"]: c for c in state.status["conditions"]}
    got = {
        "stalled": (conds["Stalled"]["status"], conds["Stalled"]["reason"]),
        "synced": (conds["Synced"]["status"], conds["Synced"]["reason"]),
        "named": want_in_message in conds["Stalled"]["message"],
        "connected": bool(rig.ext.journal),
        "delay": delay,
        "attempt": state.history.attempt,
        "events": [(e.type, e.reason) for e in rig.events],
    }
    assert got == {
        "stalled": ("True", "InvalidSpec"),
        "synced": ("False", "InvalidSpec"),
        "named": True,
        "connected": False,
        "delay": TIMING.resync,
        "attempt": 0,
        "events": [("Warning", "InvalidSpec")],
    }, conds["Stalled"]["message"]
    writes = len(rig.sink.writes)
    await rig.one_pass(state, body(spec=spec, status=rig.sink.held))
    assert (len(rig.sink.writes), len(rig.events)) == (writes, 1)


# ------------------------------------------------------------------- wake-ups


POKES: dict[str, tuple[dict[str, Any], bool]] = {
    "same body": (body(), False),
    "status changed only": (body(status={"deploymentId": "x"}), False),
    "other annotation": (body(annotations={"team": "a"}), False),
    "generation bumped": (body(generation=2), True),
    "paused": (body(annotations={"deployplane.io/paused": "true"}), True),
}


@pytest.mark.parametrize(("new_body", "woken"), POKES.values(), ids=POKES.keys())
async def test_changed_wakes_only_on_generation_or_pause(
    new_body: dict[str, Any], woken: bool
) -> None:
    rig = Rig()
    state = ResourceState()
    assert not state.changed(new_body), "never woken before the first pass"
    await rig.one_pass(state)
    assert state.changed(new_body) is woken


async def test_unpausing_wakes_too() -> None:
    rig = Rig()
    state = ResourceState()
    await rig.one_pass(state, body(annotations={"deployplane.io/paused": "true"}))
    assert state.changed(body())


# ----------------------------------------------------------- attempt, resync


async def test_attempt_counts_unsettled_passes_and_resets_when_settled() -> None:
    rig = Rig(ext=ExternalFns(observe_fn=returns(PROGRESSING)))
    state = ResourceState()
    got = []
    for observation in (PROGRESSING, PROGRESSING, PROGRESSING, observed(), PROGRESSING):
        rig.ext.observe_fn = returns(observation)
        delay = await rig.one_pass(state, body(status={"deploymentId": DEP_ID}))
        got.append((delay, state.history.attempt))
    assert got == [(2.0, 1), (3.0, 2), (4.5, 3), (600.0, 0), (2.0, 1)]


async def test_full_observation_when_resync_is_due_polls_otherwise() -> None:
    rig = Rig(ext=ExternalFns(observe_fn=returns(PROGRESSING)))
    state = ResourceState()
    b = body(status={"deploymentId": DEP_ID})
    await rig.one_pass(state, b)  # first pass: resync due
    await rig.one_pass(state, b)  # polling
    state.history.last_full -= TIMING.resync  # time passes
    await rig.one_pass(state, b)
    assert [full for *_, full in rig.observes()] == [True, False, True]


RESYNC = "deployplane.io/resync-interval"


@pytest.mark.parametrize(
    ("value", "delay"),
    [(None, 600.0), ("30", 30.0), (" 3600 ", 3600.0), ("0", None), ("604800", 604800.0)],
)
async def test_a_settled_resource_resyncs_at_its_own_interval(
    value: str | None, delay: float | None
) -> None:
    rig = Rig()
    annotations = {} if value is None else {RESYNC: value}
    b = body(annotations=annotations, status={"deploymentId": DEP_ID})
    assert await rig.one_pass(ResourceState(), b) == delay
    assert not [e for e in rig.events if e.reason == "InvalidResyncInterval"]


@pytest.mark.parametrize(("annotation", "delay"), [(None, 45.0), ("30", 30.0), ("0", 45.0)])
async def test_a_stalled_resource_that_asks_to_be_rechecked_is_looked_at_that_soon(
    annotation: str | None, delay: float
) -> None:
    """A terminal error with a Retry-After (a connection's refused key) stalls, and is
    looked at again then, or at the resync if that comes first."""
    stall = ExternalError("key refused", reason="Unauthorized", terminal=True, retry_after=45)
    rig = Rig(ext=ExternalFns(observe_fn=raises(stall)))
    annotations = {} if annotation is None else {RESYNC: annotation}
    b = body(annotations=annotations, status={"deploymentId": DEP_ID})
    assert await rig.one_pass(ResourceState(), b) == delay


async def test_its_own_interval_decides_when_a_resync_is_due() -> None:
    rig = Rig(ext=ExternalFns(observe_fn=returns(PROGRESSING)))
    state = ResourceState()
    b = body(annotations={RESYNC: "30"}, status={"deploymentId": DEP_ID})
    await rig.one_pass(state, b)
    await rig.one_pass(state, b)  # polling: not due yet
    state.history.last_full -= 30
    await rig.one_pass(state, b)
    assert [full for *_, full in rig.observes()] == [True, False, True]


@pytest.mark.parametrize("value", ["5", "604801", "-1", "1m", "", "1e3", "٣٠"])
async def test_a_bad_interval_keeps_the_operators_and_warns_once(value: str) -> None:
    rig = Rig()
    state = ResourceState()
    b = body(annotations={RESYNC: value}, status={"deploymentId": DEP_ID})
    assert await rig.one_pass(state, b) == TIMING.resync
    assert await rig.one_pass(state, b) == TIMING.resync
    warnings = [e for e in rig.events if e.reason == "InvalidResyncInterval"]
    assert len(warnings) == 1
    assert warnings[0].type == "Warning"
    assert RESYNC in warnings[0].message
    assert "0 (never)" in warnings[0].message
    assert rig.ext.journal, "the pass still reconciles"


async def test_changing_the_interval_wakes_the_resource() -> None:
    rig = Rig()
    state = ResourceState()
    await rig.one_pass(state, body(annotations={RESYNC: "60"}))
    assert not state.changed(body(annotations={RESYNC: "60"}))
    assert state.changed(body(annotations={RESYNC: "0"}))
    assert state.changed(body())


# ------------------------------------------------------------- merge patch


ROUND_TRIPS: dict[str, tuple[dict[str, Any], dict[str, Any], dict[str, Any]]] = {
    "equal": ({"a": 1, "b": {"c": [1, 2]}}, {"a": 1, "b": {"c": [1, 2]}}, {}),
    "added": ({}, {"a": 1}, {"a": 1}),
    "removed": ({"a": 1, "b": 2}, {"b": 2}, {"a": None}),
    "changed scalar": ({"a": 1}, {"a": 2}, {"a": 2}),
    "nested change": (
        {"r": {"id": "1", "s": "A"}},
        {"r": {"id": "1", "s": "B"}},
        {"r": {"s": "B"}},
    ),
    "nested removal": ({"r": {"id": "1", "s": "A"}}, {"r": {"id": "1"}}, {"r": {"s": None}}),
    "list replaced whole": (
        {"c": [{"t": "R"}]},
        {"c": [{"t": "R"}, {"t": "S"}]},
        {"c": [{"t": "R"}, {"t": "S"}]},
    ),
    "object to scalar": ({"r": {"id": "1"}}, {"r": "x"}, {"r": "x"}),
    "scalar to object": ({"r": "x"}, {"r": {"id": "1"}}, {"r": {"id": "1"}}),
    "to an empty object": ({"r": {"id": "1"}}, {"r": {}}, {"r": {"id": None}}),
    "from nothing to an empty object": ({}, {"r": {}}, {"r": {}}),
    "false and zero are values": ({"a": True, "n": 1}, {"a": False, "n": 0}, {"a": False, "n": 0}),
    "deep": (
        {"x": {"y": {"z": 1, "k": 2}}, "w": 1},
        {"x": {"y": {"z": 3}}, "w": 1},
        {"x": {"y": {"z": 3, "k": None}}},
    ),
}


@pytest.mark.parametrize(("a", "b", "want_patch"), ROUND_TRIPS.values(), ids=ROUND_TRIPS.keys())
def test_merge_patch_is_minimal_and_round_trips(
    a: dict[str, Any], b: dict[str, Any], want_patch: dict[str, Any]
) -> None:
    a_before = copy.deepcopy(a)
    patch = merge_patch(a, b)
    assert (patch, apply_merge_patch(a, patch)) == (want_patch, b)
    assert a == a_before, "inputs are not mutated"
    assert merge_patch(apply_merge_patch(a, patch), b) == {}


# RFC 7386, Appendix A (the cases whose target and patch are objects).
RFC_7386: list[tuple[dict[str, Any], dict[str, Any], dict[str, Any]]] = [
    ({"a": "b"}, {"a": "c"}, {"a": "c"}),
    ({"a": "b"}, {"b": "c"}, {"a": "b", "b": "c"}),
    ({"a": "b"}, {"a": None}, {}),
    ({"a": "b", "b": "c"}, {"a": None}, {"b": "c"}),
    ({"a": ["b"]}, {"a": "c"}, {"a": "c"}),
    ({"a": "c"}, {"a": ["b"]}, {"a": ["b"]}),
    ({"a": {"b": "c"}}, {"a": {"b": "d", "c": None}}, {"a": {"b": "d"}}),
    ({"a": [{"b": "c"}]}, {"a": [1]}, {"a": [1]}),
    ({"e": None}, {"a": 1}, {"e": None, "a": 1}),
    ({}, {"a": {"bb": {"ccc": None}}}, {"a": {"bb": {}}}),
]


@pytest.mark.parametrize(
    ("target", "patch", "want"), RFC_7386, ids=[str(p) for _, p, _ in RFC_7386]
)
def test_apply_merge_patch_follows_rfc_7386(
    target: dict[str, Any], patch: dict[str, Any], want: dict[str, Any]
) -> None:
    assert apply_merge_patch(target, patch) == want


# ------------------------------------------------------------------- config


def test_config_defaults() -> None:
    config = OperatorConfig.from_env({})
    assert (
        config.control_plane_url,
        config.api_key,
        config.tenant_id,
        config.namespaces,
        config.poll_interval,
        config.poll_max_interval,
        config.resync_interval,
        config.metrics_port,
        config.default_connection(),
        config.event_qps,
        config.event_burst,
    ) == (None, None, None, (), 2.0, 30.0, 600.0, None, None, 10.0, 50)


def test_config_from_env() -> None:
    config = OperatorConfig.from_env(
        {
            "DEPLOYPLANE_CONTROL_PLANE_URL": "http://cp:8080",
            "DEPLOYPLANE_API_KEY": "secret-key-123",
            "DEPLOYPLANE_TENANT_ID": "t-1",
            "DEPLOYPLANE_NAMESPACES": " team-a, team-b,,team-c ",
            "DEPLOYPLANE_POLL_INTERVAL": "0.5",
            "DEPLOYPLANE_POLL_MAX_INTERVAL": "10",
            "DEPLOYPLANE_RESYNC_INTERVAL": "300",
            "DEPLOYPLANE_METRICS_PORT": "9090",
            "DEPLOYPLANE_EVENT_QPS": "2.5",
            "DEPLOYPLANE_EVENT_BURST": "5",
        }
    )
    assert (config.event_qps, config.event_burst) == (2.5, 5)
    assert (
        config.namespaces,
        config.poll_interval,
        config.poll_max_interval,
        config.resync_interval,
        config.metrics_port,
        config.default_connection(),
    ) == (
        ("team-a", "team-b", "team-c"),
        0.5,
        10.0,
        300.0,
        9090,
        Connection("http://cp:8080", "secret-key-123", "t-1"),
    )
    assert "secret-key-123" not in repr(config)


def test_config_empty_values_mean_unset() -> None:
    env = {
        "DEPLOYPLANE_CONTROL_PLANE_URL": "",
        "DEPLOYPLANE_API_KEY": "",
        "DEPLOYPLANE_NAMESPACES": " , ",
        "DEPLOYPLANE_POLL_INTERVAL": "",
        "DEPLOYPLANE_METRICS_PORT": "",
    }
    config = OperatorConfig.from_env(env)
    assert (config.control_plane_url, config.api_key, config.namespaces) == (None, None, ())
    assert (config.poll_interval, config.metrics_port) == (2.0, None)


CONFIG_ERRORS: dict[str, tuple[str, str, str]] = {
    "not a number": (
        "DEPLOYPLANE_POLL_INTERVAL",
        "soon",
        "DEPLOYPLANE_POLL_INTERVAL must be a number of seconds, got 'soon'",
    ),
    "zero": (
        "DEPLOYPLANE_RESYNC_INTERVAL",
        "0",
        "DEPLOYPLANE_RESYNC_INTERVAL must be positive, got '0'",
    ),
    "negative": (
        "DEPLOYPLANE_POLL_MAX_INTERVAL",
        "-5",
        "DEPLOYPLANE_POLL_MAX_INTERVAL must be positive, got '-5'",
    ),
    "nan": (
        "DEPLOYPLANE_RESYNC_INTERVAL",
        "nan",
        "DEPLOYPLANE_RESYNC_INTERVAL must be a number of seconds, got 'nan'",
    ),
    "infinite": (
        "DEPLOYPLANE_POLL_INTERVAL",
        "inf",
        "DEPLOYPLANE_POLL_INTERVAL must be a number of seconds, got 'inf'",
    ),
    "port not a number": (
        "DEPLOYPLANE_METRICS_PORT",
        "http",
        "DEPLOYPLANE_METRICS_PORT must be a port number, got 'http'",
    ),
    "event rate not a number": (
        "DEPLOYPLANE_EVENT_QPS",
        "fast",
        "DEPLOYPLANE_EVENT_QPS must be a number of Events a second, got 'fast'",
    ),
    "event burst a fraction": (
        "DEPLOYPLANE_EVENT_BURST",
        "2.5",
        "DEPLOYPLANE_EVENT_BURST must be a whole number above 0, got '2.5'",
    ),
    "event burst zero": (
        "DEPLOYPLANE_EVENT_BURST",
        "0",
        "DEPLOYPLANE_EVENT_BURST must be a whole number above 0, got '0'",
    ),
    "port out of range": (
        "DEPLOYPLANE_METRICS_PORT",
        "70000",
        "DEPLOYPLANE_METRICS_PORT must be a port number, got '70000'",
    ),
}


@pytest.mark.parametrize(
    ("name", "value", "message"), CONFIG_ERRORS.values(), ids=CONFIG_ERRORS.keys()
)
def test_config_errors_name_the_variable(name: str, value: str, message: str) -> None:
    with pytest.raises(ConfigError) as info:
        OperatorConfig.from_env({name: value})
    assert str(info.value) == message


# ------------------------------------------------------------------ finalize

RATE_LIMITED = errors.RateLimited("429", retry_after=42.0)
FINALIZE_CASES: dict[str, tuple[Any, NotYet | None]] = {
    "gone: released, and forgotten": (returns(True), None),
    "still deleting: poll again soon": (
        returns(False),
        NotYet("waiting for the control plane to finish deleting", DELETE_POLL_SECONDS),
    ),
    "control plane down: retry after the default": (
        raises(errors.Unavailable("503")),
        NotYet("cannot delete on the control plane yet: 503", DELETE_RETRY_SECONDS),
    ),
    "rate limited: retry when the service says": (
        raises(RATE_LIMITED),
        NotYet("cannot delete on the control plane yet: 429", 42.0),
    ),
    "connection Secret missing: retry after the default": (
        raises(DependencyNotReady("connection Secret c not found")),
        NotYet(
            "cannot delete on the control plane yet: connection Secret c not found",
            DELETE_RETRY_SECONDS,
        ),
    ),
}


@pytest.mark.parametrize(("delete_fn", "want"), FINALIZE_CASES.values(), ids=FINALIZE_CASES.keys())
async def test_finalize_says_released_or_when_to_try_again(
    delete_fn: Any, want: NotYet | None
) -> None:
    rig = Rig(ext=ExternalFns(delete_fn=delete_fn))
    state = ResourceState(status={"deploymentId": DEP_ID})
    got = await rig.runner().finalize(body(), state)
    summary = None if got is None else (got.message, got.retry_after)
    assert summary == (None if want is None else (want.message, want.retry_after))
    assert rig.ext.journal[-1] == ("delete", DEP_ID)
    assert rig.gone == ([f"{NS}/agent"] if want is None else [])
    if got is not None and got.cause is not None:
        assert isinstance(got.cause, ExternalError | DependencyNotReady)


async def test_finalize_trusts_what_the_loop_wrote_over_the_body() -> None:
    """The id this operator wrote a moment ago counts, though the body has none yet."""
    rig = Rig()
    state = ResourceState(status={"deploymentId": "dep-new"})
    assert await rig.runner().finalize(body(status={}), state) is None
    assert rig.ext.journal[-1] == ("delete", "dep-new")
