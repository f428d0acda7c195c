"""What a module registers with Kopf, seen through Kopf's public decorators only
(`kopf.on.*`, `kopf.index`): each is replaced by a recorder, so a test can say which
handlers exist, with which ids and resources, and call them, without reaching into
Kopf's registry internals."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import kopf

DECORATORS = (
    "cleanup",
    "create",
    "daemon",
    "delete",
    "event",
    "field",
    "index",
    "login",
    "probe",
    "resume",
    "startup",
    "timer",
    "update",
    "validate",
    "mutate",
    "register",
)
"""Every handler decorator of `kopf.on` (and `kopf.index`)."""


@dataclass(frozen=True)
class Registration:
    decorator: str
    id: str | None
    resource: tuple[str, ...]
    fn: Callable[..., Any]
    labels: Any = None
    """The `labels=` filter given to the decorator, if any."""


def _recorder(name: str, seen: list[Registration]) -> Callable[..., Any]:
    def decorator(
        *resource: str, id: str | None = None, labels: Any = None, **_: Any
    ) -> Callable[..., Any]:
        def record(fn: Callable[..., Any]) -> Callable[..., Any]:
            seen.append(Registration(name, id, resource, fn, labels))
            return fn

        return record

    return decorator


@contextmanager
def recorded(monkeypatch: Any) -> Iterator[list[Registration]]:
    """Within: every `kopf.on.<decorator>` and `kopf.index` call is recorded, not made."""
    seen: list[Registration] = []
    for name in DECORATORS:
        recorder = _recorder(name, seen)
        monkeypatch.setattr(kopf.on, name, recorder)
        if name == "index":  # also spelled `kopf.index`
            monkeypatch.setattr(kopf, name, recorder)
    yield seen


PROBE = """
import json, kopf, sys
sys.path[:0] = {path!r}
from tests.support import kopfregistrations as k
from pytest import MonkeyPatch
with k.recorded(MonkeyPatch()) as seen:
    import {module}
print(json.dumps([[r.decorator, r.id] for r in seen]))
"""


def registered_on_import(module: str) -> list[tuple[str, str | None]]:
    """(decorator, id) of every Kopf registration `module` makes when first imported,
    in a fresh interpreter."""
    probe = PROBE.format(module=module, path=sys.path)
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    return [(decorator, id_) for decorator, id_ in json.loads(done.stdout)]
