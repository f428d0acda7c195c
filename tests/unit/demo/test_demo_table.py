"""The demo's live progress table in an 80-column terminal: long names stay whole."""

from __future__ import annotations

from rich.console import Console

from deployplane.demo.table import FitColumn, fitted_table, table

NAMES = [
    "customer-support-assistant-for-emea-region-v2",
    "internal-knowledge-base-retrieval-agent-prod",
]


def _row(kind: str, name: str, ready: str) -> dict[str, str]:
    return {
        "kind": kind,
        "name": name,
        "ready": ready,
        "synced": "True",
        "revision": "DEPLOY_FAILED" if ready == "False" else "DEPLOYED",
        "elapsed": "1234s",
        "id": "0c6f3a52-4f0e-4f55-9a3e-5b0d2f7c9e11",
    }


def render(rows: list[dict[str, str]], width: int) -> list[str]:
    console = Console(width=width, record=True, color_system=None)
    console.print(table(rows, "demo", 42.0, console.width))
    return console.export_text().rstrip("\n").splitlines()


def test_demo_table_fits_80_columns_without_cutting_names() -> None:
    rows = [
        _row("Listener", "production-listener-for-the-eu-west-cluster", "True"),
        _row("AgentDeployment", NAMES[0], "True"),
        _row("AgentDeployment", NAMES[1], "False"),
    ]
    lines = render(rows, 80)
    assert max(map(len, lines)) <= 80, "\n".join(lines)
    assert "…" not in "\n".join(lines)
    for row in rows:
        assert any(row["name"] in line for line in lines), "\n".join(lines)
    assert any(line.lstrip().startswith("agd") for line in lines)
    assert "DEPLOY_FAILED" in "\n".join(lines)


def test_demo_table_shows_ids_and_timings_on_a_wide_terminal() -> None:
    lines = render([_row("AgentDeployment", NAMES[0], "True")], 160)
    text = "\n".join(lines)
    for title in ("KIND", "NAME", "READY", "SYNCED", "REVISION", "ELAPSED", "ID"):
        assert title in lines[1], text  # lines[0] is the title
    assert "0c6f3a52-4f0e-4f55-9a3e-5b0d2f7c9e11" in text
    assert "1234s" in text


def test_fitted_table_of_the_demo_never_drops_a_column_without_a_rank() -> None:
    columns = [FitColumn("NAME"), FitColumn("ID", fold=True), FitColumn("EXTRA", drop=1)]
    rows = [["n" * 70, "i" * 36, "x" * 10]]
    table, dropped = fitted_table(columns, rows, 80)
    assert dropped == ["EXTRA"]
    assert [c.header for c in table.columns] == ["NAME", "ID"]
    assert table.columns[0].max_width == 70
    assert table.columns[1].max_width == 8
