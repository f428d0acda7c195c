"""The tree's rooms: a reader sees the parts of the biggest package, and the unit tests
sit in a folder named after the package they test (as Kopf and crossplane-runtime keep
tests beside what they test)."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
PACKAGE = ROOT / "operator" / "deployplane"
UNIT = ROOT / "tests" / "unit"
MAX_TOP_LEVEL_MODULES = 12
# Unit-test folders that test something other than one package of operator/deployplane.
NOT_A_PACKAGE = {
    "bench": "bench/",
    "charts": "charts/ and manifests/ rendered by helm and kubectl kustomize",
    "codebase": "the code base as a whole: shape, layers, docs",
    "testsupport": "tests/support and the e2e suites' conventions",
    "tools": "tools/: the image and tool builds",
}


def top_level_modules(package: Path) -> list[str]:
    """A package's own modules and subpackages, not counting its __init__."""
    return sorted(
        entry.name
        for entry in package.iterdir()
        if (entry.suffix == ".py" and entry.name != "__init__.py")
        or (entry.is_dir() and (entry / "__init__.py").exists())
    )


def test_the_control_plane_has_at_most_a_dozen_top_level_modules() -> None:
    modules = top_level_modules(PACKAGE / "controlplane")
    assert len(modules) <= MAX_TOP_LEVEL_MODULES, modules


def test_no_unit_test_lies_loose_at_the_top_of_tests_unit() -> None:
    assert sorted(path.name for path in UNIT.glob("test_*.py")) == []


def test_every_unit_test_folder_names_a_package_or_says_what_it_tests() -> None:
    folders = {e.name for e in UNIT.iterdir() if e.is_dir() and e.name != "__pycache__"}
    packages = {entry.name for entry in PACKAGE.iterdir() if (entry / "__init__.py").exists()}
    assert folders - packages - set(NOT_A_PACKAGE) == set()


def test_the_counter_counts_modules_and_packages_only(tmp_path: Path) -> None:
    (tmp_path / "__init__.py").write_text("")
    (tmp_path / "a.py").write_text("")
    (tmp_path / "notes.md").write_text("")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "__init__.py").write_text("")
    (tmp_path / "data").mkdir()
    assert top_level_modules(tmp_path) == ["a.py", "sub"]
