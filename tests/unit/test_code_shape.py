"""The shape targets of the architecture (issue 15), checked on every run: no module in
operator/ over 400 lines and no function over 60. A module that grows past them is a
sign that it does two jobs; split it rather than raise the limit."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SOURCE_ROOT = Path(__file__).resolve().parents[2] / "operator" / "deployplane"
MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 60
MODULES = sorted(SOURCE_ROOT.rglob("*.py"))


def _name(path: Path) -> str:
    return str(path.relative_to(SOURCE_ROOT.parent))


def test_the_source_root_is_found() -> None:
    assert len(MODULES) > 50


@pytest.mark.parametrize("path", MODULES, ids=_name)
def test_module_is_at_most_400_lines(path: Path) -> None:
    lines = len(path.read_text(encoding="utf-8").splitlines())
    assert lines <= MAX_MODULE_LINES, f"{_name(path)} has {lines} lines"


def _long_functions(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            length = (node.end_lineno or node.lineno) - node.lineno + 1
            if length > MAX_FUNCTION_LINES:
                out.append(f"{node.name} ({length} lines)")
    return out


@pytest.mark.parametrize("path", MODULES, ids=_name)
def test_no_function_is_over_60_lines(path: Path) -> None:
    assert _long_functions(path) == [], _name(path)


def test_test_modules_have_unique_basenames() -> None:
    """The test folders are not packages, so pytest imports each module by its basename:
    two `test_x.py` in different folders stop the whole run at collection."""
    tests_root = SOURCE_ROOT.parents[1] / "tests"
    seen: dict[str, list[str]] = {}
    for path in tests_root.rglob("test_*.py"):
        seen.setdefault(path.name, []).append(str(path.relative_to(tests_root)))
    assert {name: where for name, where in seen.items() if len(where) > 1} == {}
