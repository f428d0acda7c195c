"""tools/images/recipes.py, the pure part of the daemonless image build, loaded by its
path (tools/ is not a package): the image tests and the chart values' tests read what
`make images` builds from it."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "images_recipes", ROOT / "tools/images/recipes.py"
    )
    assert spec
    assert spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


recipes = _load()
