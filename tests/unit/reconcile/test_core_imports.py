"""The generic core imports no kind and no HTTP or Kopf library: `deployplane.reconcile`
and everything it imports load with httpx and kopf blocked, and no per-kind module
(externals, kinds with their spec models) and nothing of the API (its models) comes along."""

from __future__ import annotations

import json
import subprocess
import sys

PROBE = """
import json, pkgutil, sys
for blocked in ("httpx", "kopf"):
    sys.modules[blocked] = None  # any import of it now raises ImportError
import deployplane.reconcile
for module in pkgutil.iter_modules(deployplane.reconcile.__path__):
    __import__(f"deployplane.reconcile.{module.name}")
print(json.dumps(sorted(m for m in sys.modules if m.startswith("deployplane"))))
"""

KIND_MODULES = ("deployplane.externals", "deployplane.kinds")


def test_reconcile_imports_no_kind_no_http_and_no_kopf() -> None:
    done = subprocess.run(
        [sys.executable, "-c", PROBE], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    loaded: list[str] = json.loads(done.stdout)
    assert "deployplane.reconcile.reconciler" in loaded
    assert "deployplane.reconcile.passes" in loaded
    assert [m for m in loaded if m.startswith(KIND_MODULES)] == []
    # Nothing of the API: its client, its exception tree (the kinds' to classify,
    # externals/errors.py), its models (the core names fields by deployplane.naming).
    assert [m for m in loaded if m.startswith("deployplane.api")] == []


def test_the_probe_would_notice_a_blocked_import() -> None:
    """The blocking is real: the client (which needs httpx) fails to load under it."""
    probe = 'import sys\nsys.modules["httpx"] = None\nimport deployplane.api.client\n'
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=False
    )
    assert done.returncode != 0
    assert "httpx" in done.stderr


def test_no_package_imports_upward_into_the_generator_or_the_kinds() -> None:
    """`crd/` holds the schema machinery the kinds are built with; `crdgen/` reads the
    kinds and writes the files. Neither `crd/` nor `kinds/` imports `crdgen`, and `crd/`
    never imports `kinds` (the arrow points one way)."""
    import ast
    from pathlib import Path

    root = Path(__file__).resolve().parents[3] / "operator" / "deployplane"
    upward = []
    for package, banned in (
        ("crd", ("deployplane.kinds", "deployplane.crdgen")),
        ("kinds", ("deployplane.crdgen",)),
    ):
        for path in (root / package).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text())):
                names = []
                if isinstance(node, ast.ImportFrom) and node.module:
                    names = [node.module]
                elif isinstance(node, ast.Import):
                    names = [a.name for a in node.names]
                upward += [f"{path.name}: {n}" for n in names if n.startswith(banned)]
    assert upward == []
