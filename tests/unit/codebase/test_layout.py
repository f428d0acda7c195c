"""The tree's rooms: a reader sees the parts of the biggest package; the unit tests sit
in a folder named after the package they test, and, in a package with subpackages,
after the subpackage (as Kopf and crossplane-runtime keep tests beside what they
test); and every package of deployplane stands on a floor of the layers contract."""

from __future__ import annotations

import ast
import re
import tomllib
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


def subpackages(package: Path) -> set[str]:
    return {e.name for e in package.iterdir() if (e / "__init__.py").exists()}


def test_the_emulator_has_at_most_a_dozen_top_level_modules() -> None:
    modules = top_level_modules(PACKAGE / "emulator")
    assert len(modules) <= MAX_TOP_LEVEL_MODULES, modules


def test_no_unit_test_lies_loose_at_the_top_of_tests_unit() -> None:
    assert sorted(path.name for path in UNIT.glob("test_*.py")) == []


def test_every_unit_test_folder_names_a_package_or_says_what_it_tests() -> None:
    folders = {e.name for e in UNIT.iterdir() if e.is_dir() and e.name != "__pycache__"}
    assert folders - subpackages(PACKAGE) - set(NOT_A_PACKAGE) == set()


IMPORTED_IN_CODE = re.compile(r"^\s*(?:import|from) (deployplane(?:\.\w+)*)", re.MULTILINE)


def reached(test: Path, package: Path) -> set[str]:
    """The parts of the package (deployplane.<name>) a test module imports: a
    subpackage's name, or "" for the package itself or one of its own modules."""
    prefix = f"deployplane.{package.name}"
    subs = subpackages(package)
    found: set[str] = set()
    for node in ast.walk(ast.parse(test.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            names = [f"{node.module}.{alias.name}" for alias in node.names]
        elif isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            names = IMPORTED_IN_CODE.findall(node.value)  # code a test runs in a subprocess
        else:
            continue
        for name in names:
            if name == prefix or name.startswith(prefix + "."):
                part = name.split(".")[2] if name.count(".") >= 2 else ""
                found.add(part if part in subs else "")
    return found


def misplaced(unit: Path, package_root: Path) -> list[str]:
    """Where tests/unit does not mirror the second level of the package: a folder of
    test modules that names no subpackage, a test module at the package's level that
    reaches into one subpackage only, a test module in a subpackage's folder that never
    imports it."""
    found = []
    for folder in sorted(p for p in unit.iterdir() if p.is_dir() and p.name != "__pycache__"):
        package = package_root / folder.name
        if not (package / "__init__.py").exists():
            continue
        subs = subpackages(package)
        for inner in sorted(p for p in folder.iterdir() if p.is_dir()):
            if inner.name not in subs and any(inner.glob("**/test_*.py")):
                found.append(f"{inner.relative_to(unit)}/ names no subpackage of {folder.name}")
        for test in sorted(folder.glob("test_*.py")):
            parts = reached(test, package)
            if len(parts) == 1 and "" not in parts:
                (sub,) = parts
                found.append(f"{test.relative_to(unit)} tests {folder.name}/{sub}/ alone")
        for sub in sorted(subs):
            for test in sorted((folder / sub).glob("**/test_*.py")):
                if sub not in reached(test, package):
                    found.append(f"{test.relative_to(unit)} imports nothing of {sub}/")
    return found


def test_unit_tests_mirror_the_second_level_of_a_package_with_subpackages() -> None:
    assert misplaced(UNIT, PACKAGE) == []


def test_the_mirror_check_finds_each_kind_of_misplaced_test(tmp_path: Path) -> None:
    package, unit = tmp_path / "deployplane", tmp_path / "unit"
    for folder in (
        package / "pkg" / "sub",
        unit / "pkg" / "sub",
        unit / "pkg" / "other",
        unit / "pkg" / "snapshots",
    ):
        folder.mkdir(parents=True)
    (unit / "pkg" / "other" / "test_x.py").write_text("")
    (unit / "pkg" / "snapshots" / "golden.yaml").write_text("")  # data, not tests
    for init in (package / "__init__.py", package / "pkg" / "__init__.py"):
        init.write_text("")
    (package / "pkg" / "sub" / "__init__.py").write_text("")
    (unit / "pkg" / "test_loose.py").write_text("from deployplane.pkg.sub.x import y\n")
    (unit / "pkg" / "test_whole.py").write_text(
        "from deployplane.pkg import own\nfrom deployplane.pkg.sub import x\n"
    )
    (unit / "pkg" / "sub" / "test_elsewhere.py").write_text("from deployplane.pkg import own\n")
    (unit / "pkg" / "sub" / "test_right.py").write_text("import deployplane.pkg.sub.x\n")
    (unit / "pkg" / "sub" / "test_probe.py").write_text(
        'PROBE = """\nimport deployplane.pkg.sub\n"""\n'
    )
    assert misplaced(unit, package) == [
        "pkg/other/ names no subpackage of pkg",
        "pkg/test_loose.py tests pkg/sub/ alone",
        "pkg/sub/test_elsewhere.py imports nothing of sub/",
    ]


def test_every_package_of_deployplane_stands_on_a_floor_of_the_layers_contract() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    contracts = config["tool"]["importlinter"]["contracts"]
    (layers,) = [c["layers"] for c in contracts if c["type"] == "layers"]
    placed = {name.strip() for floor in layers for name in floor.split("|")}
    modules = {f"deployplane.{name.removesuffix('.py')}" for name in top_level_modules(PACKAGE)}
    assert modules - placed == set()


def test_the_counter_counts_modules_and_packages_only(tmp_path: Path) -> None:
    (tmp_path / "__init__.py").write_text("")
    (tmp_path / "a.py").write_text("")
    (tmp_path / "notes.md").write_text("")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "__init__.py").write_text("")
    (tmp_path / "data").mkdir()
    assert top_level_modules(tmp_path) == ["a.py", "sub"]
