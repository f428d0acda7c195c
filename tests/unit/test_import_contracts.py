"""The import layers of pyproject.toml's [tool.importlinter] hold (import-linter, as
Kopf keeps its own): no import cycle, Kopf only in controller/, the core free of Kopf,
httpx and the kinds, the CLI's configuration library free of the commands, and the
CLI's per-verb packages independent of each other."""

from __future__ import annotations

import ast
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


KOPF_ADAPTER = "operator/deployplane/controller/kopfwatch.py"


def private_kopf_imports(path: Path) -> list[str]:
    """Every `kopf._*` module that `path` imports (any form, any depth)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [a.name for a in node.names if a.name.startswith("kopf._")]
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("kopf._"):
            found.append(str(node.module))
    return found


def test_only_the_adapter_imports_kopfs_internals() -> None:
    """Kopf's docs promise `kopf`, `kopf.on` and `kopf.testing`; everything else is one
    adapter's (controller/kopfwatch.py), whose test checks the wrapped signatures."""
    offenders = {
        str(path.relative_to(ROOT)): private_kopf_imports(path)
        for folder in ("operator", "tests", "bench")
        for path in (ROOT / folder).rglob("*.py")
        if ".venv" not in path.parts
    }
    offenders = {path: found for path, found in offenders.items() if found}
    assert set(offenders) <= {KOPF_ADAPTER, "tests/unit/test_kopfwatch.py"}, offenders
    assert offenders.get(KOPF_ADAPTER), "the adapter is where Kopf's internals are used"


def test_the_private_import_finder_sees_every_form(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text(
        "import kopf._core.x\nfrom kopf._cogs import y\nimport kopf\nfrom kopf import on\n"
    )
    assert private_kopf_imports(probe) == ["kopf._core.x", "kopf._cogs"]
