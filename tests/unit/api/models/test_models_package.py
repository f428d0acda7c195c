"""`deployplane.api.models` imports a resource's module when one of its names is first
used: every name is there as before, and a command builds only the models it reads."""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path

import pytest

from deployplane.api import models

INIT = Path(models.__file__)
RESOURCE_MODULES = {
    "deployplane.api.models.builds",
    "deployplane.api.models.common",
    "deployplane.api.models.deployments",
    "deployplane.api.models.listeners",
    "deployplane.api.models.lookups",
    "deployplane.api.models.revisions",
}


def type_checking_imports() -> dict[str, str]:
    """name -> module, as the package's `if TYPE_CHECKING:` block imports them."""
    found: dict[str, str] = {}
    for node in ast.walk(ast.parse(INIT.read_text(encoding="utf-8"))):
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING":
            for statement in node.body:
                assert isinstance(statement, ast.ImportFrom)
                assert statement.module
                for alias in statement.names:
                    found[alias.asname or alias.name] = statement.module
    return found


def test_the_names_type_checkers_see_are_the_names_exported() -> None:
    assert sorted(type_checking_imports()) == sorted(models.__all__)


@pytest.mark.parametrize("name", sorted(models.__all__))
def test_every_name_is_its_home_modules_own(name: str) -> None:
    home = type_checking_imports()[name]
    assert getattr(models, name) is getattr(importlib.import_module(home), name)


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="has no attribute 'Deploymnet'"):
        _ = models.Deploymnet  # type: ignore[attr-defined]
    with pytest.raises(ImportError):
        exec("from deployplane.api.models import Deploymnet", {})


def imported_after(statement: str) -> set[str]:
    done = subprocess.run(
        [sys.executable, "-c", f"import sys\n{statement}\nprint(*sorted(sys.modules))"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return set(done.stdout.split())


def test_the_package_alone_builds_no_model() -> None:
    imported = imported_after("import deployplane.api.models")
    assert not imported & RESOURCE_MODULES
    assert "pydantic" not in imported


def test_a_deployment_builds_the_models_it_holds_and_no_other() -> None:
    imported = imported_after("from deployplane.api.models import Deployment")
    assert imported & RESOURCE_MODULES == {
        "deployplane.api.models.common",
        "deployplane.api.models.deployments",
        "deployplane.api.models.revisions",
    }


def test_the_client_imports_no_model_until_a_call_reads_one() -> None:
    imported = imported_after("import deployplane.api.client")
    assert not imported & (RESOURCE_MODULES - {"deployplane.api.models.common"})
