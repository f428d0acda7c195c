"""The renderer stays pure after its split: no Kubernetes or HTTP client (nor the YAML
library the agent's I/O uses) among what the `render` package imports."""

from __future__ import annotations

import subprocess
import sys

# Run in a fresh interpreter: this test process has long imported all of these.
_PROBE = """
import importlib.abc, sys
BLOCKED = {"kubernetes", "httpx", "aiohttp", "kopf", "yaml"}
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name.split(".")[0] in BLOCKED:
            raise ImportError("the renderer imported " + name)
sys.meta_path.insert(0, Block())
import deployplane.dataplane.render
"""


def test_render_package_imports_no_client() -> None:
    result = subprocess.run(
        [sys.executable, "-c", _PROBE], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr
