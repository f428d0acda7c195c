"""The import contracts of pyproject.toml's [tool.importlinter] hold (import-linter, as
Kopf keeps its own): no import cycle among the siblings of any package of deployplane
or bench; the floors of deployplane, each importing only those below it; the three
programs (operator, listener agent, emulator) independent of each other, and the agent
and the emulator free of what only the operator uses; Kopf only in controller/; the core
free of Kopf, httpx, the kinds and the API; the CLI's configuration library free of the
commands; and the CLI's per-verb packages independent of each other. And no module of
operator/ or bench/ is in an import circle at all (a package and its own modules
included)."""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Callable, Iterable
from pathlib import Path

import grimp

ROOT = Path(__file__).resolve().parents[3]
LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"


def test_every_import_contract_is_kept() -> None:
    done = subprocess.run(
        [str(LINT_IMPORTS), "--no-logo"], cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "Contracts: 8 kept, 0 broken." in done.stdout, done.stdout[-2000:]


def import_circles(
    modules: Iterable[str], imported_by: Callable[[str], Iterable[str]]
) -> list[list[str]]:
    """The import circles among `modules`: each strongly connected set of two or more
    (Tarjan's algorithm), sorted; a module importing only itself is no circle."""
    inside = set(modules)
    order: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    circles: list[list[str]] = []

    def visit(module: str) -> None:
        order[module] = low[module] = len(order)
        stack.append(module)
        for target in imported_by(module):
            if target not in inside:
                continue
            if target not in order:
                visit(target)
                low[module] = min(low[module], low[target])
            elif target in stack:
                low[module] = min(low[module], order[target])
        if low[module] == order[module]:
            members = [stack.pop()]
            while members[-1] != module:
                members.append(stack.pop())
            if len(members) > 1:
                circles.append(sorted(members))

    for module in sorted(inside):
        if module not in order:
            visit(module)
    return sorted(circles)


def test_no_module_of_operator_or_bench_is_in_an_import_circle() -> None:
    """Stricter than the acyclic-siblings contract: no circle through a package's
    `__init__` either, and `if TYPE_CHECKING:` imports count (a circle a type hint
    needs is still a circle to a reader)."""
    sys.path.insert(0, str(ROOT))  # bench/ is a package at the root, as `-m bench` runs it
    try:
        graph = grimp.build_graph("deployplane", "bench", cache_dir=None)
    finally:
        sys.path.remove(str(ROOT))
    ours = [m for m in graph.modules if m.split(".")[0] in ("deployplane", "bench")]
    assert "bench.scale" in ours
    assert "deployplane.reconcile.passes" in ours
    assert import_circles(ours, graph.find_modules_directly_imported_by) == []


def test_the_circle_finder_finds_circles_and_only_those() -> None:
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": {"d"}, "e": {"a", "x"}}
    assert import_circles(edges, lambda m: edges.get(m, ())) == [["a", "b", "c"]]


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
    assert set(offenders) <= {KOPF_ADAPTER, "tests/unit/controller/test_kopfwatch.py"}, offenders
    assert offenders.get(KOPF_ADAPTER), "the adapter is where Kopf's internals are used"


def test_the_private_import_finder_sees_every_form(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text(
        "import kopf._core.x\nfrom kopf._cogs import y\nimport kopf\nfrom kopf import on\n"
    )
    assert private_kopf_imports(probe) == ["kopf._core.x", "kopf._cogs"]
