"""The control-plane API contract: models, errors and the typed client."""

import sys

# httpx imports its own command line (`httpx._main`: rich's console, pygments' lexers)
# whenever click and rich are installed, as they are here, though nothing here runs it:
# most of what `import httpx` costs every CLI command that calls the API
# (bench/cli.py). Marked absent, httpx is as installed without its `cli` extra: its
# `httpx.main` only says how to install it.
sys.modules.setdefault("httpx._main", None)  # type: ignore[arg-type]  # None: not importable
