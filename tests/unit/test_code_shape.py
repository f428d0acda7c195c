"""The shape targets of the architecture (issue 15), checked on every run: no module in
operator/ over 400 lines and no function over 60. A smell detector, not a target: a
module that grows past them is a sign that it does two jobs, so split it where its
meaning splits (never by chopping to get under a number).

Where one long linear function reads better whole, it is allowed by name in
`LONG_BY_DESIGN`, with the reason and its own bound (crossplane-runtime does the same for
its managed `Reconcile`: `//nolint:gocyclo // See note above`)."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Final

import pytest

SOURCE_ROOT = Path(__file__).resolve().parents[2] / "operator" / "deployplane"
MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 60
MODULES = sorted(SOURCE_ROOT.rglob("*.py"))

LONG_BY_DESIGN: Final[dict[tuple[str, str], tuple[int, str]]] = {
    ("deployplane/controller/metrics.py", "__init__"): (
        90,
        "every metric family declared in one place, in the order /metrics lists them: "
        "split, a reader could no longer see at once which families exist",
    ),
    ("deployplane/controlplane/app.py", "create_app"): (
        80,
        "the emulator assembled in the order it must be (lifespan, state, routers, the "
        "error mapping, middleware innermost first): one recipe, read top to bottom",
    ),
    ("deployplane/controlplane/patching.py", "decide_patch"): (
        80,
        "one PATCH decision in the order the service checks a PATCH; each step feeds the "
        "next (the merged config, the revision config, the errors), and the pieces are "
        "helpers already",
    ),
    ("deployplane/crdgen/schema.py", "crd"): (
        80,
        "one CustomResourceDefinition literal, in the shape kubectl shows it",
    ),
}
"""(module, function) -> (its own bound in lines, why it is one function)."""


def _name(path: Path) -> str:
    return str(path.relative_to(SOURCE_ROOT.parent))


def test_the_source_root_is_found() -> None:
    assert len(MODULES) > 50


@pytest.mark.parametrize("path", MODULES, ids=_name)
def test_module_is_at_most_400_lines(path: Path) -> None:
    lines = len(path.read_text(encoding="utf-8").splitlines())
    assert lines <= MAX_MODULE_LINES, f"{_name(path)} has {lines} lines"


def _functions(path: Path) -> dict[str, int]:
    """Every function of the module (methods included) -> its length in lines."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {
        node.name: (node.end_lineno or node.lineno) - node.lineno + 1
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
    }


def _long_functions(path: Path) -> list[str]:
    out = []
    for name, length in _functions(path).items():
        bound, _ = LONG_BY_DESIGN.get((_name(path), name), (MAX_FUNCTION_LINES, ""))
        if length > bound:
            out.append(f"{name} ({length} lines)")
    return out


@pytest.mark.parametrize("path", MODULES, ids=_name)
def test_no_function_is_over_60_lines(path: Path) -> None:
    assert _long_functions(path) == [], _name(path)


@pytest.mark.parametrize("where", sorted(LONG_BY_DESIGN), ids="::".join)
def test_each_long_by_design_exception_names_a_function_that_is_there(
    where: tuple[str, str],
) -> None:
    """A stale exception (the function renamed, split or gone) would silently allow a
    new long function of that name: each must name one that exists, with a reason."""
    module, function = where
    assert function in _functions(SOURCE_ROOT.parent / module), where
    bound, reason = LONG_BY_DESIGN[where]
    assert bound > MAX_FUNCTION_LINES
    assert reason


def test_test_modules_have_unique_basenames() -> None:
    """The test folders are not packages, so pytest imports each module by its basename:
    two `test_x.py` in different folders stop the whole run at collection."""
    tests_root = SOURCE_ROOT.parents[1] / "tests"
    seen: dict[str, list[str]] = {}
    for path in tests_root.rglob("test_*.py"):
        seen.setdefault(path.name, []).append(str(path.relative_to(tests_root)))
    assert {name: where for name, where in seen.items() if len(where) > 1} == {}
