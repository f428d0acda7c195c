"""The shape targets of the architecture, checked on every run: no module in operator/
over 400 lines and no function over 60. A smell detector, not a target: a module that
grows past them is a sign that it does two jobs, so split it where its meaning splits
(never by chopping to get under a number).

Every definition is measured, by its qualified name (`Class.method`, `outer.inner`).
Where one long linear function reads better whole, it is allowed by that name in
`LONG_BY_DESIGN`, with the reason and its own bound (crossplane-runtime does the same for
its managed `Reconcile`: `//nolint:gocyclo // See note above`); an entry that allows
nothing fails the run."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Final

import pytest

SOURCE_ROOT = Path(__file__).resolve().parents[3] / "operator" / "deployplane"
MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 60
MODULES = sorted(SOURCE_ROOT.rglob("*.py"))

LONG_BY_DESIGN: Final[dict[tuple[str, str], tuple[int, str]]] = {}
"""(module, qualified function name) -> (its own bound in lines, why it is one function).
Empty: every function is within the limit. An entry must be needed (the function
is longer than the limit) or the test fails, so none outlives its reason."""


def _name(path: Path) -> str:
    return str(path.relative_to(SOURCE_ROOT.parent))


def test_the_source_root_is_found() -> None:
    assert len(MODULES) > 50


@pytest.mark.parametrize("path", MODULES, ids=_name)
def test_module_is_at_most_400_lines(path: Path) -> None:
    lines = len(path.read_text(encoding="utf-8").splitlines())
    assert lines <= MAX_MODULE_LINES, f"{_name(path)} has {lines} lines"


def functions(source: str) -> list[tuple[str, int]]:
    """Every function definition of a module -> (its qualified name, its length in lines):
    `Class.method`, `outer.inner`, one entry per definition (two of one name, an
    `@overload` say, are both measured), so no definition hides behind another's name."""
    found: list[tuple[str, int]] = []

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                length = (child.end_lineno or child.lineno) - child.lineno + 1
                found.append((prefix + child.name, length))
                visit(child, f"{prefix}{child.name}.")
            elif isinstance(child, ast.ClassDef):
                visit(child, f"{prefix}{child.name}.")
            else:  # an `if`, `try` or `with` block: its definitions are the module's
                visit(child, prefix)

    visit(ast.parse(source), "")
    return found


def _functions(path: Path) -> list[tuple[str, int]]:
    return functions(path.read_text(encoding="utf-8"))


def long_functions(module: str, measured: list[tuple[str, int]]) -> list[str]:
    out = []
    for name, length in measured:
        bound, _ = LONG_BY_DESIGN.get((module, name), (MAX_FUNCTION_LINES, ""))
        if length > bound:
            out.append(f"{name} ({length} lines)")
    return out


@pytest.mark.parametrize("path", MODULES, ids=_name)
def test_no_function_is_over_60_lines(path: Path) -> None:
    assert long_functions(_name(path), _functions(path)) == [], _name(path)


def unneeded_exceptions(
    exceptions: dict[tuple[str, str], tuple[int, str]],
) -> list[str]:
    """The `LONG_BY_DESIGN`-shaped entries that allow nothing: the function is gone,
    renamed or split, or back within the limit (a stale entry would silently allow a
    new long function of that name); or the entry has no reason or no higher bound."""
    out = []
    for (module, name), (bound, reason) in sorted(exceptions.items()):
        lengths = [
            n for qualified, n in _functions(SOURCE_ROOT.parent / module) if qualified == name
        ]
        if not lengths:
            out.append(f"{module}::{name}: no such function")
        elif max(lengths) <= MAX_FUNCTION_LINES:
            out.append(f"{module}::{name}: {max(lengths)} lines, within the limit")
        if bound <= MAX_FUNCTION_LINES or not reason:
            out.append(f"{module}::{name}: needs a bound above the limit and a reason")
    return out


def test_every_long_by_design_exception_is_needed() -> None:
    assert unneeded_exceptions(LONG_BY_DESIGN) == []


def test_an_exception_for_a_function_within_the_limit_fails() -> None:
    metrics = "deployplane/controller/metrics.py"
    stale = {(metrics, "OperatorMetrics.forget"): (90, "was long once")}
    assert unneeded_exceptions(stale) == [
        f"{metrics}::OperatorMetrics.forget: "
        f"{dict(_functions(SOURCE_ROOT.parent / metrics))['OperatorMetrics.forget']} lines, "
        "within the limit"
    ]
    gone = {(metrics, "__init__"): (90, "a bare name no longer names a function")}
    assert unneeded_exceptions(gone) == [f"{metrics}::__init__: no such function"]


def test_methods_are_measured_by_their_qualified_name() -> None:
    """`OperatorMetrics.__init__` is measured itself, not hidden behind the shorter
    `__init__` of another class in its module."""
    measured = dict(_functions(SOURCE_ROOT / "controller" / "metrics.py"))
    assert measured["OperatorMetrics.__init__"] > 40
    assert "_FailingCollector.__init__" in measured
    assert "__init__" not in measured


def test_every_definition_is_measured_nested_and_same_named_ones_too() -> None:
    source = (
        "class A:\n    def f(self):\n" + "        x = 1\n" * 70 + "\n"
        "class B:\n    def f(self):\n        pass\n"
        "def outer():\n    def inner():\n" + "        y = 2\n" * 70 + "    return inner\n"
        "if True:\n    def g():\n        pass\n    def g():\n" + "        z = 3\n" * 70
    )
    measured = functions(source)
    assert [name for name, _ in measured] == ["A.f", "B.f", "outer", "outer.inner", "g", "g"]
    assert long_functions("probe.py", measured) == [
        "A.f (71 lines)",
        "outer (73 lines)",
        "outer.inner (71 lines)",
        "g (71 lines)",
    ]


def test_test_modules_have_unique_basenames() -> None:
    """The test folders are not packages, so pytest imports each module by its basename:
    two `test_x.py` in different folders stop the whole run at collection."""
    tests_root = SOURCE_ROOT.parents[1] / "tests"
    seen: dict[str, list[str]] = {}
    for path in tests_root.rglob("test_*.py"):
        seen.setdefault(path.name, []).append(str(path.relative_to(tests_root)))
    assert {name: where for name, where in seen.items() if len(where) > 1} == {}
