"""The end-to-end tests annotate the cluster fixtures with the fixtures' own types.

pytest never compares a test's annotation with what its fixture returns, so a test that
annotated `dev_cluster: DevCluster` (or `Any`) could use the dev cluster's `state_dir`
and pass mypy, then fail on an existing cluster (issue 28). mypy checks tests/e2e against
`E2ECluster` (tests/support/e2ecluster.py) only if every test takes the fixture with the
type the fixture declares; this checks that they do, and that the fixtures and helpers
of tests/support that take them do too.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parents[2]
E2E = TESTS / "e2e"
# The e2e suites and the support modules that hold their fixtures and helpers.
MODULES = sorted([*E2E.rglob("*.py"), *(TESTS / "support").glob("*.py")])
# The fixtures that stand for the cluster or what it has.
CLUSTER_FIXTURES = ("dev_cluster", "started_cluster", "kwok_nodes", "workloads", "workload_images")


def _functions(path: Path) -> list[ast.FunctionDef]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)]


def _fixture_types() -> dict[str, str]:
    """Fixture name -> the type a test receives (`Iterator[X]` yields X)."""
    types = {}
    for fn in _functions(E2E / "conftest.py"):
        if fn.name in CLUSTER_FIXTURES and fn.returns is not None:
            returns = fn.returns
            if isinstance(returns, ast.Subscript) and ast.unparse(returns.value) == "Iterator":
                returns = returns.slice
            types[fn.name] = ast.unparse(returns)
    return types


def test_every_cluster_fixture_declares_its_type() -> None:
    assert sorted(_fixture_types()) == sorted(CLUSTER_FIXTURES)
    assert _fixture_types()["dev_cluster"] == "E2ECluster"


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(TESTS)))
def test_tests_take_cluster_fixtures_with_the_fixtures_types(path: Path) -> None:
    types = _fixture_types()
    wrong = [
        f"{fn.name}({arg.arg}: {ast.unparse(arg.annotation) if arg.annotation else '-'}), "
        f"the fixture gives {types[arg.arg]}"
        for fn in _functions(path)
        for arg in fn.args.args + fn.args.kwonlyargs
        if arg.arg in types
        and (arg.annotation is None or ast.unparse(arg.annotation) != types[arg.arg])
    ]
    assert wrong == [], path.name
