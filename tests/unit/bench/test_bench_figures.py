"""The pure parts of `make bench`: the operator/floor ratio, the target verdict, the
audit-log count of a controller's own writes and the profile summary."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from bench.__main__ import bench_lines, pair_order
from bench.audit_counts import requests_by_verb, writes_by_resource, writes_per_cr
from bench.profiling import bucket, package, summarise
from bench.report import (
    CPU_RATIO_GOAL,
    FLOOR_RATIO_GOAL,
    Figure,
    cpu_ratio,
    floor_ratio,
    median_ratio,
    parse,
    parse_floor,
    verdict,
)
from bench.scale import GOALS, cpu_growth, scaled_name

OPERATOR = "system:serviceaccount:bench:deployplane-bench"
T0 = dt.datetime(2026, 11, 23, 3, 0, 0, tzinfo=dt.UTC)


def event(
    verb: str,
    resource: str,
    *,
    user: str = OPERATOR,
    namespace: str = "bench",
    at: float = 1.0,
    sub: str | None = None,
    stage: str = "ResponseComplete",
) -> dict[str, Any]:
    ref: dict[str, Any] = {"resource": resource, "namespace": namespace, "name": "agent-00000"}
    if sub:
        ref["subresource"] = sub
    return {
        "stage": stage,
        "verb": verb,
        "user": {"username": user},
        "objectRef": ref,
        "requestReceivedTimestamp": (T0 + dt.timedelta(seconds=at)).isoformat(),
    }


# ---------------------------------------------------------------- the ratio


def test_floor_ratio_is_operator_converge_over_floor_converge() -> None:
    operator = ["[03:00:00] progress", "BENCH converge_1000_s 23.0 s goal <= 60"]
    floor = ["FLOOR converge_1000_s 20.0 s", "FLOOR k8s_writes_per_cr 3.00 writes"]
    ratio = floor_ratio(operator, floor)
    assert ratio is not None
    assert ratio.name == "operator_floor_ratio"
    assert ratio.value == pytest.approx(1.15)
    assert ratio.line() == "BENCH operator_floor_ratio 1.15 x goal <= 1.15"
    assert ratio.met
    assert FLOOR_RATIO_GOAL == 1.15


def test_floor_ratio_above_the_goal_is_missed() -> None:
    ratio = floor_ratio(
        ["BENCH converge_1000_s 31.6 s goal <= 60"], ["FLOOR converge_1000_s 20.4 s"]
    )
    assert ratio is not None
    assert ratio.line() == "BENCH operator_floor_ratio 1.55 x goal <= 1.15"
    assert not ratio.met


def test_floor_ratio_needs_both_lines() -> None:
    assert floor_ratio(["BENCH converge_1000_s 31.6 s goal <= 60"], ["FLOOR other 1 s"]) is None
    assert (
        floor_ratio(["BENCH api_calls_per_cr 3 calls goal <= 4"], ["FLOOR converge_1000_s 2 s"])
        is None
    )
    with pytest.raises(ValueError, match="positive"):
        floor_ratio(["BENCH converge_1000_s 3.0 s goal <= 60"], ["FLOOR converge_1000_s 0.0 s"])


def test_parse_floor_reads_name_and_value_only_from_floor_lines() -> None:
    assert parse_floor("FLOOR k8s_writes_per_cr 3.00 writes") == ("k8s_writes_per_cr", 3.0)
    assert parse_floor("BENCH converge_1000_s 3.0 s goal <= 60") is None


def test_verdict_names_every_missed_target() -> None:
    lines = [
        "BENCH k8s_writes_per_cr 4.00 writes goal <= 3",
        "BENCH steady_k8s_writes_per_min 0.0 writes goal = 0",
        "BENCH emulator_get_rps 3473 req/s goal >= 1000",
        "BENCH operator_rss_mb_1000 210.0 MB goal <= 150",
        "FLOOR converge_1000_s 20.0 s",
    ]
    assert verdict(lines) == "targets met: 2/4; missed: k8s_writes_per_cr, operator_rss_mb_1000"
    assert verdict(lines[1:3]) == "targets met: 2/2"


def test_bench_lines_keep_the_last_of_each_and_skip_progress_logs() -> None:
    lines = [
        "[03:00:00] BENCH converge_1000_s 30.0 s goal <= 60",  # a progress log of it
        "BENCH converge_1000_s 31.0 s goal <= 60",
        "BENCH converge_1000_s 32.0 s goal <= 60",
    ]
    assert bench_lines(lines) == ["BENCH converge_1000_s 32.0 s goal <= 60"]
    fig = parse(bench_lines(lines)[0])
    assert fig is not None
    assert fig.value == 32.0


# ---------------------------------------------------------------- the audit log


def test_writes_by_resource_counts_only_the_controllers_writes_in_the_window() -> None:
    events = [
        event("create", "agentdeployments", user="kubernetes-admin"),  # the bench's apply
        event("patch", "agentdeployments"),  # finalizer (+ marker)
        event("patch", "agentdeployments", sub="status"),  # id with the first conditions
        event("patch", "agentdeployments", sub="status", at=2.0),  # Ready
        event("create", "events", at=2.0),
        event("get", "agentdeployments"),  # a read
        event("watch", "agentdeployments"),
        event("patch", "agentdeployments", at=-1.0),  # before the window
        event("patch", "agentdeployments", at=9.0),  # after it
        event("patch", "agentdeployments", namespace="other"),
        event("patch", "agentdeployments", stage="ResponseStarted"),  # not a final stage
        event("patch", "", sub=None),  # a non-resource request
    ]
    counts = writes_by_resource(
        events,
        user=OPERATOR,
        namespace="bench",
        since=T0,
        until=T0 + dt.timedelta(seconds=5),
    )
    assert counts == {"agentdeployments": 1, "agentdeployments/status": 2, "events": 1}


def test_failed_writes_count_and_the_window_bounds_are_inclusive() -> None:
    events = [
        event("patch", "agentdeployments", at=0.0),
        event("update", "agentdeployments", at=5.0),
    ]
    counts = writes_by_resource(
        events, user=OPERATOR, namespace="bench", since=T0, until=T0 + dt.timedelta(seconds=5)
    )
    assert counts == {"agentdeployments": 2}


def test_writes_per_cr_leaves_events_and_other_resources_out() -> None:
    counts = {"agentdeployments": 2000, "agentdeployments/status": 2000, "events": 2000}
    assert writes_per_cr(counts, "agentdeployments", 1000) == 4.0
    assert writes_per_cr({"listeners": 5}, "agentdeployments", 5) == 0.0
    with pytest.raises(ValueError, match="positive"):
        writes_per_cr(counts, "agentdeployments", 0)


# ---------------------------------------------------------------- profiles


def test_summarise_ranks_self_and_inclusive_samples() -> None:
    raw = [
        "main (a.py:1);loop (b.py:2);parse (c.py:3) 6",
        "main (a.py:1);loop (b.py:2) 3",
        "main (a.py:1);send (d.py:4) 1",
        "garbage line",
    ]
    text = summarise(raw)
    assert text.startswith("10 samples")
    self_part, inclusive_part = text.split("## inclusive (top)")
    assert self_part.index("60.0% parse (c.py:3)") < self_part.index("30.0% loop (b.py:2)")
    assert "100.0% main (a.py:1)" in inclusive_part
    assert "90.0% loop (b.py:2)" in inclusive_part
    assert summarise([]) == "no samples"


def test_package_of_a_frame() -> None:
    assert package("handle (kopf/_core/reactor/processing.py:42)") == "kopf"
    assert package("f (/x/.venv/lib/python3.11/site-packages/httpx/_client.py:7)") == "httpx"
    assert package("run (deployplane/reconcile/reconciler.py:80)") == "deployplane/reconcile"
    assert package("loads (json/__init__.py:346)") == "json"
    assert package("do_handshake (ssl.py:979)") == "ssl"
    assert package("__instancecheck__ (<frozen abc>:119)") == "abc"
    assert package("_find_spec (<frozen importlib._bootstrap>:1070)") == "importlib"


def test_failed_only_counts_the_refused_writes() -> None:
    refused = event("patch", "agentdeployments")
    refused["responseStatus"] = {"code": 422}
    accepted = event("patch", "agentdeployments")
    accepted["responseStatus"] = {"code": 200}
    window = {"user": OPERATOR, "namespace": "bench", "since": T0}
    until = T0 + dt.timedelta(seconds=5)
    assert writes_by_resource([refused, accepted], **window, until=until) == {"agentdeployments": 2}
    failed = writes_by_resource([refused, accepted], **window, until=until, failed_only=True)
    assert failed == {"agentdeployments": 1}


def test_requests_by_verb_counts_reads_and_other_namespaces_too() -> None:
    events = [
        event("watch", "namespaces", namespace=""),
        event("patch", "agentdeployments", sub="status"),
        event("patch", "agentdeployments", sub="status"),
        event("create", "agentdeployments", user="kubernetes-admin"),
        event("get", "agentdeployments", at=7.0),
    ]
    counts = requests_by_verb(events, user=OPERATOR, since=T0, until=T0 + dt.timedelta(seconds=5))
    assert counts == {"watch namespaces": 1, "patch agentdeployments/status": 2}


def test_bucket_puts_a_control_plane_call_inside_a_pass_with_the_calls() -> None:
    call = "Handle._run (asyncio/events.py:80);PassRunner.run (deployplane/reconcile/passes.py:1)"
    call += ";ControlPlaneClient._request (deployplane/api/client.py:9)"
    assert bucket(call) == "pass: control-plane calls (httpx)"
    kopf = "Handle._run (asyncio/events.py:80)"
    kopf += ";process_resource_event (kopf/_core/reactor/processing.py:1)"
    assert bucket(kopf) == "Kopf: per-event processing"
    assert bucket("BaseEventLoop._run_once (asyncio/base_events.py:1)") == "other"


def test_the_ratio_of_several_pairs_is_the_median_pairs() -> None:
    def ratio(value: float) -> Figure:
        return Figure("operator_floor_ratio", value, "x", "<=", FLOOR_RATIO_GOAL, 2)

    assert median_ratio([ratio(1.4), ratio(1.1), ratio(1.2)]).value == 1.2
    assert median_ratio([ratio(1.3)]).value == 1.3
    # An even count takes the upper of the middle two: never the kinder one.
    assert median_ratio([ratio(1.1), ratio(1.2)]).value == 1.2
    with pytest.raises(ValueError, match="no floor/operator pair"):
        median_ratio([])


def test_pairs_alternate_which_controller_runs_first() -> None:
    """Drift over a sequence of runs must not always land on the operator's side."""
    floor, operator = ["-m", "bench.floor"], ["-m", "bench.operator"]
    firsts = [pair_order(pair, floor, operator)[0][0] for pair in range(4)]
    assert firsts == ["floor", "operator", "floor", "operator"]
    assert pair_order(1, floor, operator) == [("operator", operator), ("floor", floor)]


def test_uid_ranges_cover_the_hash_space_without_gaps() -> None:
    """`bench/shards.py --uid-ranges`: the apiserver wants 16 hex digits (HexLess
    compares by length first), and 2^64 as the last range's end."""
    from bench.shards import uid_range

    assert uid_range(0, 2) == (
        "shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')"
    )
    assert uid_range(1, 2).endswith("'0x8000000000000000', '0x10000000000000000')")
    bounds = [uid_range(i, 3).split("'")[1:4:2] for i in range(3)]
    assert bounds[0][0] == "0x0000000000000000"
    assert [b[1] for b in bounds[:-1]] == [b[0] for b in bounds[1:]]


def test_cpu_ratio_is_operator_cpu_over_floor_cpu() -> None:
    operator = ["BENCH converge_1000_s 18.0 s goal <= 60", "CPU operator_cpu_s_1000 9.00 s"]
    floor = ["FLOOR converge_1000_s 16.0 s", "FLOOR cpu_s_1000 7.50 s"]
    ratio = cpu_ratio(operator, floor)
    assert ratio is not None
    assert ratio.name == "operator_cpu_ratio"
    assert ratio.value == pytest.approx(1.2)
    assert ratio.goal == CPU_RATIO_GOAL
    assert ratio.line() == "BENCH operator_cpu_ratio 1.20 x goal <= 1.2"


def test_cpu_ratio_needs_both_lines_and_ignores_the_wall_clock_ones() -> None:
    wall = ["BENCH converge_1000_s 18.0 s goal <= 60"]
    assert cpu_ratio(wall, ["FLOOR cpu_s_1000 7.5 s"]) is None
    assert cpu_ratio(["CPU operator_cpu_s_1000 9.0 s"], ["FLOOR converge_1000_s 16.0 s"]) is None
    with pytest.raises(ValueError, match="positive"):
        cpu_ratio(["CPU operator_cpu_s_1000 9.0 s"], ["FLOOR cpu_s_1000 0 s"])


def test_scale_figures_are_the_1000_ones_named_for_n() -> None:
    assert scaled_name("converge_1000_s", 10000) == "converge_10000_s"
    assert scaled_name("operator_rss_mb_1000", 10000) == "operator_rss_mb_10000"
    assert scaled_name("k8s_writes_per_cr", 10000) == "k8s_writes_per_cr_10000"
    assert scaled_name("apply_to_post_p99_ms", 10000) == "apply_to_post_p99_ms_10000"
    assert GOALS["operator_rss_mb_1000"] == ("<=", 250)
    assert GOALS["k8s_writes_per_cr"] == ("<=", 3)


def test_cpu_growth_is_per_resource_cpu_at_n_over_the_baselines() -> None:
    growth = cpu_growth(per_cr_at_n=0.0099, per_cr_at_baseline=0.009)
    assert growth.name == "cpu_s_per_cr_growth"
    assert growth.value == pytest.approx(1.1)
    assert growth.met
    assert not cpu_growth(0.0120, 0.009).met
    with pytest.raises(ValueError, match="positive"):
        cpu_growth(0.01, 0.0)


def test_shard_rss_ratio_is_the_larger_shard_over_the_single_operator() -> None:
    from bench.shardphase import shard_rss_ratio

    ratio = shard_rss_ratio({"a": 120.0, "b": 150.0}, single_rss_mb=200.0)
    assert ratio.name == "shard_rss_ratio"
    assert ratio.value == pytest.approx(0.75)
    assert not ratio.met
    assert ratio.line() == "BENCH shard_rss_ratio 0.75 x goal <= 0.6"
    assert shard_rss_ratio({"a": 100.0, "b": 90.0}, 200.0).met
    with pytest.raises(ValueError, match="positive"):
        shard_rss_ratio({"a": 100.0}, 0.0)
    with pytest.raises(ValueError, match="no shard"):
        shard_rss_ratio({}, 200.0)


def test_duplicate_creates_count_deployments_beyond_one_per_resource() -> None:
    from bench.shardphase import duplicate_creates

    assert duplicate_creates([]) == 0
    assert duplicate_creates(["agent-00000", "agent-00001"]) == 0
    twice = ["agent-00000", "agent-00001", "agent-00001", "agent-00002", "agent-00001"]
    assert duplicate_creates(twice) == 2


def test_the_scale_runs_resources_split_in_halves_between_two_shards() -> None:
    from bench.shardphase import shard_counts, shard_key

    names = [f"agent-{i:05d}" for i in range(1000)] + [f"agent-single-{i:03d}" for i in range(50)]
    keys = [shard_key(name) for name in names]
    assert keys[:3] == ["a", "b", "a"]
    assert keys.count("a") == keys.count("b") == 525
    assert shard_key("listener-x") in ("a", "b")  # no trailing number: a hash of the name
    labelled = [{"metadata": {"labels": {"sharding.fluxcd.io/key": k}}} for k in keys]
    assert shard_counts([*labelled, {"metadata": {}}]) == {"a": 525, "b": 525, "": 1}


def test_ready_held_reads_the_ready_agentdeployments_series_only() -> None:
    from bench.shardphase import ready_held

    text = "\n".join(
        [
            "# HELP deployplane_resources Resources by condition type and status",
            'deployplane_resources{condition="Ready",kind="Listener",status="True"} 4.0',
            'deployplane_resources{condition="Ready",kind="AgentDeployment",status="False"} 2.0',
            'deployplane_resources{condition="Ready",kind="AgentDeployment",status="True"} 750.0',
        ]
    )
    assert ready_held(text) == 750
    assert ready_held("") == 0
