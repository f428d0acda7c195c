"""The import layers of pyproject.toml's [tool.importlinter] hold (import-linter, as
Kopf keeps its own): no import cycle, Kopf only in controller/, the core free of Kopf,
httpx and the kinds, the CLI's configuration library free of the commands, and the
CLI's per-verb packages independent of each other."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"


def test_every_import_contract_is_kept() -> None:
    done = subprocess.run(
        [str(LINT_IMPORTS), "--no-logo"], cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "Contracts: 5 kept, 0 broken." in done.stdout, done.stdout[-2000:]
