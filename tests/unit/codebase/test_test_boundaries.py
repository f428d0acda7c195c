"""Tests lean on support code, never on one another, and the package ships no test code.

- The test folders (tests/unit, tests/integration, tests/e2e and their subfolders) hold
  test modules (`test_*.py`) and `conftest.py` only. Every other module of tests/ (a
  harness, a fake, fixtures and bodies that several suites share) is in tests/support/,
  named for what it holds: a newcomer finds shared code in one place.
- No module of tests/ or bench/ imports a test module: not `tests.<folder>.test_x`, not a
  relative import, not a test module's bare name (pytest's default import mode puts each
  test folder on sys.path, so `from test_x import y` works, and imports test_x a second
  time). The source a test runs in a child process (a string of Python) counts too. The
  allowed targets are tests/support and the conftests. A fixture several modules share
  lives in tests/support and each module imports it by name: pytest then registers it in
  that module with the scope and autouse it declares, as it did where it was written.
- The package (operator/deployplane, all the wheel ships) holds no test code: no module
  imports a test framework or the tests (pytest, its plugins, respx, hypothesis,
  schemathesis, unittest, `tests`), and none is named as test support is (`conftest`,
  `fixtures`, `testing`, `test_*`, `*_test`).
"""

from __future__ import annotations

import ast
import contextlib
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
TESTS = ROOT / "tests"
PACKAGE = ROOT / "operator" / "deployplane"
# Top-level modules that are test code: importing one makes a module test code.
TEST_FRAMEWORKS = frozenset(
    {"_pytest", "hypothesis", "pytest", "respx", "schemathesis", "tests", "unittest", "xdist"}
)
TEST_SUPPORT_NAMES = frozenset({"conftest", "fixtures", "testing"})
ALLOWED_TEST_IMPORTS: dict[tuple[str, str], str] = {}
"""(package module, test module it imports) -> why the wheel needs it. Empty: the
package imports no test code. An entry must be needed, or the test fails."""


def _is_support(path: Path, tests: Path) -> bool:
    return path.is_relative_to(tests / "support")


def _imports(source: str) -> Iterator[tuple[int, str, list[str]]]:
    """(level, module, names) of every import in `source`, and in the strings of it that
    are Python source with imports of their own (code run in a child process)."""
    tree = ast.parse(source)
    # The literal parts of an f-string are pieces of a string, not strings of their own.
    pieces = {
        id(part)
        for node in ast.walk(tree)
        if isinstance(node, ast.JoinedStr)
        for part in node.values
    }
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield 0, alias.name, []
        elif isinstance(node, ast.ImportFrom):
            yield node.level, node.module or "", [alias.name for alias in node.names]
        elif (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and "import " in node.value
            and id(node) not in pieces
        ):
            yield from _imports_of_code(node.value)


def _imports_of_code(text: str) -> Iterator[tuple[int, str, list[str]]]:
    """The imports of a string that is Python source; of a template (`str.format`
    fields make it no Python), those of its lines that are import statements."""
    try:
        yield from _imports(text)
    except SyntaxError:
        for line in text.splitlines():
            if line.startswith(("import ", "from ")):
                with contextlib.suppress(SyntaxError):
                    yield from _imports(line)


def _file_of(dotted: str, root: Path) -> Path | None:
    """The module file (or package folder) `dotted` names under `root`, if any."""
    path = root.joinpath(*dotted.split("."))
    for candidate in (path.with_suffix(".py"), path / "__init__.py", path):
        if candidate.exists():
            return candidate
    return None


def _is_test_module(path: Path, tests: Path) -> bool:
    """A module of a test folder other than a conftest, or such a folder itself (or a
    name in one that is no module any more: an import of a module moved away)."""
    inside = path.is_relative_to(tests) and path != tests
    return inside and not _is_support(path, tests) and path.stem != "conftest"


def imports_of_test_modules(source: str, tests: Path) -> list[str]:
    """What `source` (a module of tests/ or bench/) imports of the test modules under
    `tests`, as written: absolute, by bare name, or relative."""
    root = tests.parent
    bare = {
        p.stem for p in tests.rglob("*.py") if _is_test_module(p, tests) and p.name != "__init__.py"
    }
    found = []
    for level, module, names in _imports(source):
        if level:
            found.append("." * level + module)
        elif module.split(".")[0] in bare:
            found.append(module)
        elif module.split(".")[0] == tests.name:
            targets = [f"{module}.{name}" for name in names if _file_of(f"{module}.{name}", root)]
            for dotted in targets or [module]:
                target = _file_of(dotted, root) or root.joinpath(*dotted.split("."))
                if _is_test_module(target, tests):
                    found.append(dotted)
    return found


def named_as_test_support(path: Path) -> bool:
    stem = path.stem
    return stem in TEST_SUPPORT_NAMES or stem.startswith("test_") or stem.endswith("_test")


def _test_code_imports(source: str) -> list[str]:
    found = []
    for level, module, _ in _imports(source):
        top = module.split(".")[0]
        if not level and (top in TEST_FRAMEWORKS or top.startswith("pytest_")):
            found.append(module)
    return found


def _name(path: Path) -> str:
    return str(path.relative_to(ROOT))


def _importers() -> list[Path]:
    return sorted([*TESTS.rglob("*.py"), *(ROOT / "bench").rglob("*.py")])


# ----------------------------------------------------------------- tests/ and bench/


def test_the_test_folders_hold_only_test_modules_and_conftests() -> None:
    strays = [
        _name(p)
        for p in TESTS.rglob("*.py")
        if not _is_support(p, TESTS) and p.name != "conftest.py" and not p.name.startswith("test_")
    ]
    assert strays == [], "shared code goes to tests/support/"


@pytest.mark.parametrize("path", _importers(), ids=_name)
def test_no_module_imports_a_test_module(path: Path) -> None:
    imported = imports_of_test_modules(path.read_text(encoding="utf-8"), TESTS)
    assert imported == [], f"{_name(path)}: move what it takes to tests/support/"


def test_the_import_check_finds_a_test_module_however_it_is_imported(tmp_path: Path) -> None:
    tests = tmp_path / "tests"
    for module in ("unit/cli/test_cli.py", "e2e/conftest.py", "support/fakes.py"):
        (tests / module).parent.mkdir(parents=True, exist_ok=True)
        (tests / module).write_text("")
    (tests / "support" / "__init__.py").write_text("")
    # f-strings: the strings of this module that are Python source are checked too.
    cli = "test_cli"
    source = (
        f"from tests.unit.cli.{cli} import FakeService\n"
        f"from tests.unit.cli import {cli}\n"
        f"import tests.unit.cli.{cli}\n"
        f"from {cli} import run\n"
        "from . import helpers\n"
        f"CHILD = 'import sys\\nfrom tests.unit.cli.{cli} import listener\\n'\n"
        f"TEMPLATE = 'sys.path.insert(0, {{repo!r}})\\nfrom tests.unit.cli.{cli} import run\\n'\n"
        "import pytest\n"
        "from tests.support.fakes import FakeKube\n"
        "from tests.support import fakes\n"
        "from tests.e2e.conftest import E2E_LABEL\n"
        f"NOT_CODE = 'the import of {cli}'\n"
        "from tests.e2e.operator_harness import Emulator\n"
    )
    assert imports_of_test_modules(source, tests) == [
        "tests.unit.cli.test_cli",
        "tests.unit.cli.test_cli",
        "tests.unit.cli.test_cli",
        "test_cli",
        ".",
        "tests.e2e.operator_harness",
        "tests.unit.cli.test_cli",
        "tests.unit.cli.test_cli",
    ]


# ------------------------------------------------------------------------ the package


@pytest.mark.parametrize("path", sorted(PACKAGE.rglob("*.py")), ids=_name)
def test_the_package_holds_no_test_code(path: Path) -> None:
    module = _name(path)
    imported = [
        name
        for name in _test_code_imports(path.read_text(encoding="utf-8"))
        if (module, name) not in ALLOWED_TEST_IMPORTS
    ]
    assert imported == [], f"{module}: test code belongs in tests/support/"
    assert not named_as_test_support(path), f"{module}: test support belongs in tests/support/"


def test_every_allowed_test_import_is_needed() -> None:
    for module, name in ALLOWED_TEST_IMPORTS:
        assert name in _test_code_imports((ROOT / module).read_text(encoding="utf-8"))


def test_the_package_check_finds_test_frameworks_and_test_support_names() -> None:
    source = (
        "import pytest\nfrom _pytest.fixtures import FixtureDef\nimport pytest_asyncio\n"
        "from unittest import mock\nfrom tests.support.fakekube import FakeKube\n"
        "import httpx\nfrom deployplane.devcluster import manifests\n"
    )
    assert _test_code_imports(source) == [
        "pytest",
        "_pytest.fixtures",
        "pytest_asyncio",
        "unittest",
        "tests.support.fakekube",
    ]
    named = [named_as_test_support(Path(n)) for n in ("fixtures.py", "test_x.py", "x_test.py")]
    assert named == [True, True, True]
    assert not named_as_test_support(Path("manifests.py"))
