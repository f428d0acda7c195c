"""Nothing in operator/ or bench/ reaches into another object's private attributes (a
library's internals change without notice: httpcore's pool, aiohttp's sites), except
the few listed here with the reason. Kopf's private modules are one adapter's
(tests/unit/codebase/test_import_contracts.py)."""

from __future__ import annotations

import ast
import functools
from pathlib import Path
from typing import Final

ROOT = Path(__file__).resolve().parents[3]

ALLOWED: Final[dict[tuple[str, str], str]] = {
    ("operator/deployplane/emulator/store/rows.py", "row._mapping"): (
        "SQLAlchemy's documented Row API (underscored so no column name can clash)"
    ),
    ("operator/deployplane/emulator/builds/imagebuild/extract.py", "os._exit"): (
        "the standard library's documented exit without cleanup, in a forked child"
    ),
    ("operator/deployplane/devcluster/processes.py", "os._exit"): (
        "the standard library's documented exit without cleanup, in a forked child"
    ),
    ("operator/deployplane/devcluster/cluster.py", "cluster._server"): (
        "DevCluster.attach: the class's own fields, set by its own classmethod"
    ),
    ("operator/deployplane/devcluster/cluster.py", "cluster._owns_files"): (
        "DevCluster.attach: the class's own fields, set by its own classmethod"
    ),
    ("operator/deployplane/devcluster/cluster.py", "cluster._procs"): (
        "DevCluster.attach: the class's own fields, set by its own classmethod"
    ),
    ("bench/floor_controller.py", "self.kube._session"): (
        "the floor sends its requests through the operator's own KubernetesApi session"
    ),
    ("bench/floor_controller.py", "self.kube._headers"): (
        "the floor sends the operator's own KubernetesApi headers"
    ),
}
"""(file, expression) -> why it may touch a private attribute."""


def private_accesses(source: str) -> list[str]:
    """Every `x._name` (not `self`'s or `cls`'s, not a dunder) and every `getattr`,
    `setattr` or `hasattr` with a `"_name"` literal, as written."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute) and _private(node.attr):
            owner = node.value
            if not (isinstance(owner, ast.Name) and owner.id in ("self", "cls")):
                found.append(ast.unparse(node))
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in ("getattr", "setattr", "hasattr")
            and len(node.args) >= 2
            and isinstance(node.args[1], ast.Constant)
            and isinstance(node.args[1].value, str)
            and _private(node.args[1].value)
        ):
            found.append(ast.unparse(node))
    return found


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


@functools.cache
def _accesses() -> frozenset[tuple[str, str]]:
    return frozenset(
        (str(path.relative_to(ROOT)), expression)
        for folder in ("operator", "bench")
        for path in (ROOT / folder).rglob("*.py")
        for expression in private_accesses(path.read_text(encoding="utf-8"))
    )


def test_no_private_attribute_of_another_object_is_touched() -> None:
    assert sorted(_accesses() - set(ALLOWED)) == []


def test_every_allowed_access_is_still_there() -> None:
    """A stale entry would silently allow a new access of that shape."""
    assert sorted(set(ALLOWED) - _accesses()) == []


def test_the_finder_sees_attributes_and_getattr_but_not_self() -> None:
    source = (
        "client._transport._pool\n"
        "getattr(pool, '_network_backend', None)\n"
        "self._mine\n"
        "cls._registry\n"
        "obj.__dict__\n"
        "setattr(pool, 'public', 1)\n"
    )
    assert sorted(private_accesses(source)) == [
        "client._transport",
        "client._transport._pool",
        "getattr(pool, '_network_backend', None)",
    ]
