"""Label shards: which resources an instance owns, the watch selectors and Kopf label
filters built from that, and the handover (the old shard forgets a resource whose label
moved, without finalizing it; the new one adopts it by the id its status records).
No Kubernetes: Kopf's public decorators recorded, the fake kind over FakeKube."""

from __future__ import annotations

from typing import Any

import kopf
import pytest
from click.testing import CliRunner
from tests.support import kopfregistrations
from tests.support.fakeexternal import ExternalFns
from tests.support.fakekube import FakeKube
from tests.support.workers_rig import KEY, NS, body, rig, settle

from deployplane.cli.root import root
from deployplane.controller import handlers
from deployplane.controller.config import OperatorConfig
from deployplane.controller.runtime import build_runtime
from deployplane.controller.sharding import SHARD_DEFAULT_ENV, SHARD_ENV, ShardError, Sharding
from deployplane.controller.tuning import tune_kopf
from deployplane.kinds import KINDS
from deployplane.kube.paths import GROUP, SHARD_LABEL, VERSION
from deployplane.reconcile.finalizer import FINALIZER
from deployplane.reconcile.schedule import Result


def labels(value: str | None) -> dict[str, str]:
    return {} if value is None else {SHARD_LABEL: value}


@pytest.mark.parametrize(
    ("sharding", "selector", "owned"),
    [
        (Sharding(), None, {None: True, "a": True, "b": True}),
        (Sharding(shard="a"), f"{SHARD_LABEL}=a", {None: False, "a": True, "b": False}),
        (Sharding(default=True), f"!{SHARD_LABEL}", {None: True, "a": False, "b": False}),
    ],
)
def test_an_instance_owns_its_shard_and_watches_it_by_label_selector(
    sharding: Sharding, selector: str | None, owned: dict[str | None, bool]
) -> None:
    assert sharding.label_selector() == selector
    assert {value: sharding.owns(labels(value)) for value in owned} == owned
    assert {value: sharding.owns_value(value) for value in owned} == owned
    assert {value: sharding.disowns_value(value) for value in owned} == {
        value: not mine for value, mine in owned.items()
    }


def test_bad_shard_options_are_refused_by_name() -> None:
    with pytest.raises(ShardError, match="exclude each other"):
        Sharding(shard="a", default=True)
    for bad in ("", "-a", "a b", "x" * 64, "é"):
        with pytest.raises(ShardError, match="not a label value"):
            Sharding(shard=bad)
    with pytest.raises(ShardError, match="true or false"):
        Sharding.from_env({SHARD_DEFAULT_ENV: "yes please"})


def test_the_environment_round_trips() -> None:
    for sharding in (Sharding(), Sharding(shard="team-a.1"), Sharding(default=True)):
        assert Sharding.from_env(sharding.to_env()) == sharding
    assert Sharding.from_env({}) == Sharding()


def test_the_watch_of_every_kind_but_the_connections_carries_the_shard_selector() -> None:
    """Server-side: the apiserver sends a shard nothing of the others' resources. The
    connections are watched whole: every instance needs their index."""
    settings = kopf.OperatorSettings()
    tune_kopf(settings, Sharding(shard="a"))
    chosen = settings.watching.label_selectors.items()
    selected = {str(selector): value for selector, value in chosen}
    plurals = sorted(k.plural for k in KINDS if not k.indexed)
    assert plurals == ["agentdeployments", "listeners"]
    assert len(selected) == 2
    assert all(value == f"{SHARD_LABEL}=a" for value in selected.values())
    for plural in plurals:
        assert any(plural in key for key in selected)
    unsharded = kopf.OperatorSettings()
    tune_kopf(unsharded, Sharding())
    assert not list(unsharded.watching.label_selectors.items())


def registered(monkeypatch: pytest.MonkeyPatch, sharding: Sharding) -> dict[str, Any]:
    with kopfregistrations.recorded(monkeypatch) as seen:
        handlers.register(KINDS, sharding=sharding)
    return {r.id: r for r in seen if r.decorator == "event"}


def test_unsharded_every_kind_has_one_unfiltered_handler(monkeypatch: pytest.MonkeyPatch) -> None:
    events = registered(monkeypatch, Sharding())
    assert sorted(events) == [
        "watch-agentdeployments",
        "watch-controlplaneconnections",
        "watch-listeners",
    ]
    assert all(r.labels is None for r in events.values())


@pytest.mark.parametrize("sharding", [Sharding(shard="a"), Sharding(default=True)])
def test_sharded_the_connections_are_filtered_by_kopf_mine_and_theirs(
    monkeypatch: pytest.MonkeyPatch, sharding: Sharding
) -> None:
    events = registered(monkeypatch, sharding)
    assert sorted(events) == [
        "release-controlplaneconnections",
        "watch-agentdeployments",
        "watch-controlplaneconnections",
        "watch-listeners",
    ]
    # The server-side-selected kinds have no handler filter: the DELETED event of a
    # resource leaving the selector carries its new label, and must still arrive.
    assert events["watch-agentdeployments"].labels is None
    assert events["watch-listeners"].labels is None
    mine = events["watch-controlplaneconnections"].labels
    theirs = events["release-controlplaneconnections"].labels
    if sharding.default:
        assert mine == {SHARD_LABEL: kopf.ABSENT}
        assert theirs == {SHARD_LABEL: kopf.PRESENT}
    else:
        assert mine == {SHARD_LABEL: "a"}
        check = theirs[SHARD_LABEL]
        assert [check(v) for v in (None, "a", "b")] == [True, False, True]
    assert events["release-controlplaneconnections"].resource == (
        GROUP,
        VERSION,
        "controlplaneconnections",
    )


async def test_release_forgets_a_resource_without_finalizing_it() -> None:
    """The old shard lets go: no pass after, no finalization, our finalizer stays on the
    object for the new shard, nothing deleted in the control plane."""
    ext = ExternalFns()
    workers, kube, _ = rig(ext)
    workers.observe("Fake", "ADDED", body())
    await settle(workers)  # created: the marker and our finalizer on, the id recorded
    writes = (len(kube.writes), len(kube.object_writes))
    assert KEY in workers.resources
    moved = body(labels={SHARD_LABEL: "b"}, finalizers=[FINALIZER])
    workers.release("Fake", moved)
    assert KEY not in workers.resources
    assert workers.queue.due_now() == 0
    assert await workers.run_pass(KEY) == Result(), "no pass over a released resource"
    assert (len(kube.writes), len(kube.object_writes)) == writes, "nothing written"
    assert not kube.finalizers_removed
    assert not [c for c in ext.journal if c[0] == "delete"]
    workers.release("Fake", moved)  # again, or one never held: nothing


async def test_the_new_shard_adopts_by_the_recorded_id_and_creates_nothing() -> None:
    """The resource arrives at the new shard with the id the old one recorded: the
    first pass observes that deployment and creates none."""
    ext = ExternalFns()
    old, kube, _ = rig(ext)
    old.observe("Fake", "ADDED", body())
    await settle(old)
    status = dict(kube.statuses[(NS, "fakes", "w1")])
    assert status.get("deploymentId") == "dep-new"
    assert creates(ext) == 1
    old.release("Fake", body(labels={SHARD_LABEL: "b"}))

    new, new_kube, _ = rig(ext)
    moved = body(labels={SHARD_LABEL: "b"}, finalizers=[FINALIZER])
    moved["status"] = status
    new.observe("Fake", "ADDED", moved)
    await settle(new)
    assert creates(ext) == 1, "no second create"
    assert ("observe", "dep-new", True) in ext.journal, "the recorded id observed"
    assert not new_kube.finalizers_removed


def creates(ext: ExternalFns) -> int:
    return sum(1 for call in ext.journal if call[0] == "create")


def test_the_cli_refuses_both_shard_options(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(SHARD_ENV, raising=False)
    result = CliRunner().invoke(root, ["operator", "run", "--shard", "a", "--shard-default"])
    assert result.exit_code == 2
    assert "exclude each other" in result.output


def test_build_runtime_is_unchanged_by_sharding() -> None:
    runtime = build_runtime(OperatorConfig(), FakeKube())  # type: ignore[arg-type]
    assert set(runtime.workers.runners) == {k.kind for k in KINDS}
