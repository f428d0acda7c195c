"""The import-time check of a built image's graphs, run inside the image as an
unprivileged user: each graph of $LANGSERVE_GRAPHS is imported the way the server
imports it (`langgraph_api.graph`: its file by path, under a name made of the path) and
must have its attribute. A failure's last line of output is the build's reason."""

from __future__ import annotations

__all__ = ["CHECK_SCRIPT"]

CHECK_SCRIPT = r"""
import importlib.util, json, os, sys, traceback
graphs = json.loads(os.environ["LANGSERVE_GRAPHS"])
for graph_id, spec in graphs.items():
    path = spec["path"] if isinstance(spec, dict) else spec
    file, _, attr = path.rpartition(":")
    name = file.replace("/", "__").replace(".py", "").replace(" ", "_").lstrip(".")
    try:
        modspec = importlib.util.spec_from_file_location(name, file)
        if modspec is None or modspec.loader is None:
            raise ImportError(f"{file} is not a Python file")
        module = importlib.util.module_from_spec(modspec)
        sys.modules[name] = module
        modspec.loader.exec_module(module)
    except BaseException as exc:
        traceback.print_exc(file=sys.stdout)
        if isinstance(exc, SyntaxError):
            summary = f"SyntaxError: {exc.msg} ({exc.filename}, line {exc.lineno})"
        else:
            summary = "".join(traceback.format_exception_only(exc)).strip().splitlines()[-1]
        print(f"graph '{graph_id}' does not import: {summary}", flush=True)
        sys.exit(1)
    if attr not in module.__dict__:
        print(f"graph '{graph_id}': {file} has no attribute {attr!r}", flush=True)
        sys.exit(1)
    print(f"Graph '{graph_id}' imports ({path})", flush=True)
"""
