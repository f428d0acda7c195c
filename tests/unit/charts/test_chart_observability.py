"""The chart's Grafana dashboard and PrometheusRule: off by default; when on, every
expression is PromQL that Prometheus's own parser accepts (tools/k8s/promql) and names
only series the operator exports (deployplane.controller.metrics)."""

from __future__ import annotations

import json
import os
import re
from typing import Any

import pytest
from tests.support import chart, gotools
from tests.support.chart import Doc, find, find_all

from deployplane.controller.metrics import OperatorMetrics, exported_metric_names

ON = {"metrics": {"grafanaDashboard": {"enabled": True}, "prometheusRule": {"enabled": True}}}
# `up` is Prometheus's own per-target series: the only one the operator does not export.
SCRAPE_SERIES = frozenset({"up"})
# Grafana's variables, replaced by what Grafana would substitute before sending a query.
GRAFANA_VARIABLES = {"$__rate_interval": "1m"}


def _required(what: str) -> None:
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(what, pytrace=False)
    pytest.skip(what)


@pytest.fixture(scope="module", autouse=True)
def _helm() -> None:
    try:
        chart.helm_binary()
    except chart.HelmNotFound as e:
        _required(str(e))


@pytest.fixture(scope="module")
def on() -> list[Doc]:
    return chart.render(ON)


def dashboard(docs: list[Doc]) -> dict[str, Any]:
    cm = find(docs, "ConfigMap", "deployplane-dashboard")
    parsed: dict[str, Any] = json.loads(cm["data"]["deployplane.json"])
    return parsed


def dashboard_exprs(docs: list[Doc]) -> dict[str, str]:
    """Panel title -> query, with Grafana's variables substituted."""
    exprs = {}
    for panel in dashboard(docs)["panels"]:
        for target in panel.get("targets", []):
            expr = target["expr"]
            for variable, value in GRAFANA_VARIABLES.items():
                expr = expr.replace(variable, value)
            exprs[f"{panel['title']} {target['refId']}"] = expr
    return exprs


def rules(docs: list[Doc]) -> dict[str, dict[str, Any]]:
    rule = find(docs, "PrometheusRule")
    return {r["alert"]: r for group in rule["spec"]["groups"] for r in group["rules"]}


def all_exprs(docs: list[Doc]) -> dict[str, str]:
    return {**dashboard_exprs(docs), **{a: r["expr"] for a, r in rules(docs).items()}}


def test_dashboard_and_rule_are_off_by_default() -> None:
    docs = chart.render()
    assert not [
        d for d in find_all(docs, "ConfigMap") if d["metadata"]["name"].endswith("-dashboard")
    ]
    assert not find_all(docs, "PrometheusRule")


def test_dashboard_configmap_carries_the_grafana_sidecar_label(on: list[Doc]) -> None:
    cm = find(on, "ConfigMap", "deployplane-dashboard")
    assert cm["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert cm["metadata"]["namespace"] == chart.NAMESPACE
    board = dashboard(on)
    assert board["uid"] == "deployplane-operator"
    # The datasource is a variable: the dashboard works with any Prometheus data source.
    assert [v["type"] for v in board["templating"]["list"]] == ["datasource"]


def test_dashboard_covers_conditions_reconciles_latency_by_endpoint_and_revisions(
    on: list[Doc],
) -> None:
    exprs = " ".join(dashboard_exprs(on).values())
    assert "sum by (kind, condition) (deployplane_resources{" in exprs
    assert "deployplane_reconciles_total" in exprs
    assert re.search(r'result=~"retrying\|stalled"', exprs)
    latency = [e for e in dashboard_exprs(on).values() if "duration_seconds_bucket" in e]
    assert len(latency) == 2  # p50 and p99
    assert all("endpoint" in e and "histogram_quantile" in e for e in latency)
    assert "sum by (kind, status) (deployplane_revisions)" in exprs


def test_rule_has_the_four_alerts_scoped_to_the_release(on: list[Doc]) -> None:
    alerts = rules(on)
    assert set(alerts) == {
        "DeployplaneResourcesStalled",
        "DeployplaneResourcesNotReady",
        "DeployplaneControlPlaneErrors",
        "DeployplaneOperatorDown",
    }
    selector = f'job="deployplane-metrics", namespace="{chart.NAMESPACE}"'
    for name, rule in alerts.items():
        assert selector in rule["expr"], name
        assert rule["labels"]["severity"], name
        assert rule["annotations"]["summary"], name
    assert 'condition="Stalled", status="True"' in alerts["DeployplaneResourcesStalled"]["expr"]
    assert alerts["DeployplaneResourcesNotReady"]["expr"].endswith("> 1800")  # 30 min default
    assert alerts["DeployplaneOperatorDown"]["labels"]["severity"] == "critical"


def test_rule_thresholds_come_from_values() -> None:
    values = {
        "metrics": {
            "prometheusRule": {
                "enabled": True,
                "notReadyMinutes": 45,
                "controlPlaneErrorRatio": 0.25,
                "stalledFor": "2m",
                "labels": {"release": "kube-prometheus-stack"},
            }
        }
    }
    docs = chart.render(values)
    alerts = rules(docs)
    assert alerts["DeployplaneResourcesNotReady"]["expr"].endswith("> 2700")
    assert alerts["DeployplaneControlPlaneErrors"]["expr"].endswith("> 0.25")
    assert alerts["DeployplaneResourcesStalled"]["for"] == "2m"
    assert find(docs, "PrometheusRule")["metadata"]["labels"]["release"] == "kube-prometheus-stack"


def test_every_expression_parses_and_names_only_exported_metrics(on: list[Doc]) -> None:
    try:
        parsed = gotools.promql(list(all_exprs(on).values()))
    except gotools.CheckerNotFound as e:
        _required(str(e))
    exported = exported_metric_names() | SCRAPE_SERIES
    names = dict(zip(all_exprs(on), parsed, strict=True))
    for where, result in names.items():
        assert not result.error, f"{where}: {result.expr}\n{result.error}"
        assert result.metrics, f"{where}: selects no series"
        unknown = set(result.metrics) - exported
        assert not unknown, f"{where} queries {sorted(unknown)}, not exported by the operator"
    # And the other way round: every series family the operator exports is queried.
    used = {m for r in parsed for m in r.metrics}
    for family in OperatorMetrics().registry.collect():
        samples = {family.name + suffix for suffix in ("", "_total", "_bucket")}
        assert used & samples, family.name


def test_the_promql_check_catches_a_typo_and_an_unknown_metric() -> None:
    """The check above is only as good as the checker: it must refuse both mistakes."""
    try:
        typo, unknown = gotools.promql(
            ["sum by (kind (deployplane_resources)", "rate(deployplane_reconcile_total[5m])"]
        )
    except gotools.CheckerNotFound as e:
        _required(str(e))
    assert "parse error" in typo.error
    assert unknown.metrics == ["deployplane_reconcile_total"]
    assert not set(unknown.metrics) <= exported_metric_names()


def test_helm_lint_is_clean_with_dashboard_and_rule(tmp_path: Any) -> None:
    values = tmp_path / "values.yaml"
    values.write_text(json.dumps(ON))
    out = chart.helm("lint", "--strict", str(chart.CHART), "--values", str(values), check=False)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "[WARNING]" not in out.stdout, out.stdout


@pytest.mark.parametrize(
    "bad",
    [
        {"prometheusRule": {"notReadyMinutes": 0}},
        {"prometheusRule": {"controlPlaneErrorRatio": 2}},
        {"prometheusRule": {"stalledFor": "five minutes"}},
        {"grafanaDashboard": {"labels": {"grafana_dashboard": 1}}},
        {"grafanaDashboard": {"enable": True}},
    ],
)
def test_values_schema_refuses_bad_observability_values(bad: dict[str, Any]) -> None:
    error = chart.render_error({"metrics": bad})
    assert "values don't meet the specifications of the schema" in error, error
