"""docs/cli.md's command reference is exactly what the commands' --help says."""

from __future__ import annotations

from pathlib import Path

from deployplane.cli import docgen

DOC = Path(__file__).resolve().parents[3] / "docs" / "cli.md"


def test_docs_cli_md_is_generated_from_the_real_help() -> None:
    current = DOC.read_text(encoding="utf-8")
    assert docgen.updated(current) == current, (
        "docs/cli.md drifted from the code: run .venv/bin/python -m deployplane.cli.docgen"
    )


def test_the_reference_covers_every_command_and_option() -> None:
    text = docgen.reference()
    for heading in (
        "deployplane apply",
        "deployplane deployments list",
        "deployplane deployments wait",
        "deployplane config set-context",
        "deployplane controlplane serve",
        "deployplane listener run",
    ):
        assert f"### `{heading}`" in text
    for option in ("--no-headers", "--context", "--wait", "--status", "--image-version"):
        assert option in text
    for option in ("--autoscaler", "DEPLOYPLANE_AUTOSCALER", "--gateway", "--route-host"):
        assert option in text
    assert "╭" not in text  # plain text, not the terminal's boxes
