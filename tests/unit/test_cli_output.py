"""The CLI's tables in a terminal: 80 columns, long names never cut, nested fields as
YAML. Same fake service as tests/unit/test_cli.py; $COLUMNS sets the terminal width."""

from __future__ import annotations

import re
from uuid import uuid4

import httpx
from tests.unit import test_cli
from tests.unit.test_cli import DEP_ID, FakeService, deployment, listener, make_app
from typer.testing import CliRunner, Result

from deployplane.commands.output import FitColumn, fitted_table

service = test_cli.service  # the same fake control plane, as a fixture of this module

LONG_NAMES = [
    "customer-support-assistant-for-emea-region-v2",
    "a-very-long-deployment-name-that-keeps-going-past-forty",
]


def run_at(width: int, *args: str) -> Result:
    return CliRunner().invoke(make_app(), list(args), env={"COLUMNS": str(width)})


def lines_of(result: Result) -> list[str]:
    return result.stdout.rstrip("\n").splitlines()


def unfolded(result: Result) -> str:
    """The output with folded cells joined back: every whitespace run removed."""
    return re.sub(r"\s+", "", result.stdout)


def test_deployments_list_fits_80_columns_and_keeps_long_names_whole(
    service: FakeService,
) -> None:
    items = [deployment(id=str(uuid4()), name=name) for name in LONG_NAMES]
    service.on("GET", "/v2/deployments", [httpx.Response(200, json={"resources": items})])
    result = run_at(80, "deployments", "list")
    assert result.exit_code == 0, result.output
    lines = lines_of(result)
    assert max(map(len, lines)) <= 80, "\n" + result.stdout
    assert "…" not in result.stdout
    for item in items:
        # The name on one line, never cut; the id may fold but is all there.
        assert any(item["name"] in line for line in lines), result.stdout
        assert item["id"] in unfolded(result)
    assert "hidden at this width" in result.stdout
    assert "ACTIVE REVISION" in result.stdout  # named in the footnote


def test_deployments_list_shows_every_column_when_there_is_room(service: FakeService) -> None:
    items = [deployment(id=str(uuid4()), name=name) for name in LONG_NAMES]
    service.on("GET", "/v2/deployments", [httpx.Response(200, json={"resources": items})])
    result = run_at(250, "deployments", "list")
    assert result.exit_code == 0, result.output
    header = lines_of(result)[0]
    for title in ("NAME", "STATUS", "ID", "SOURCE", "LATEST REVISION", "UPDATED"):
        assert title in header
    assert all(item["id"] in result.stdout for item in items)  # unfolded: room enough
    assert "hidden at" not in result.stdout


def test_listeners_list_fits_80_columns(service: FakeService) -> None:
    long = listener(compute_id="production-cluster-in-eu-west-1-with-a-long-name")
    service.on("GET", "/v2/listeners", [httpx.Response(200, json={"resources": [long]})])
    result = run_at(80, "listeners", "list")
    assert result.exit_code == 0, result.output
    lines = lines_of(result)
    assert max(map(len, lines)) <= 80, "\n" + result.stdout
    assert any(long["compute_id"] in line for line in lines)


def test_deployments_get_shows_nested_fields_as_indented_yaml_without_nulls(
    service: FakeService,
) -> None:
    body = deployment(
        name=LONG_NAMES[1],
        source_config={"listener_id": None, "resource_spec": {"min_scale": 1, "cpu": None}},
        source_revision_config={"image_uri": "img:1", "repo_ref": None},
        secrets=[{"name": "OPENAI_API_KEY"}],
    )
    service.on("GET", f"/v2/deployments/{DEP_ID}", [httpx.Response(200, json=body)])
    result = run_at(80, "deployments", "get", DEP_ID)
    assert result.exit_code == 0, result.output
    lines = lines_of(result)
    assert max(map(len, lines)) <= 80, "\n" + result.stdout
    assert "{" not in result.stdout, result.stdout
    assert "null" not in result.stdout
    assert "None" not in result.stdout
    text = "\n".join(line.rstrip() for line in lines)
    # resource_spec's fields indented under it, in the VALUE column.
    nested = re.search(r"resource_spec:\n(\s+)min_scale: 1", text)
    assert nested, text
    assert re.search(r"source_revision_config\s+image_uri: img:1", text), text
    assert re.search(r"secrets\s+- name: OPENAI_API_KEY", text), text
    assert any(LONG_NAMES[1] in line for line in lines)


def test_fitted_table_never_drops_a_column_without_a_rank() -> None:
    columns = [FitColumn("NAME"), FitColumn("ID", fold=True), FitColumn("EXTRA", drop=1)]
    rows = [["n" * 70, "i" * 36, "x" * 10]]
    table, dropped = fitted_table(columns, rows, 80)
    assert dropped == ["EXTRA"]
    assert [c.header for c in table.columns] == ["NAME", "ID"]
    # NAME keeps its 70 characters; ID folds into what is left (at least 8).
    assert table.columns[0].max_width == 70
    assert table.columns[1].max_width == 8
