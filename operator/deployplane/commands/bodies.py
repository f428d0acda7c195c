"""Reading request bodies for `create -f` / `update -f` from YAML or JSON files.

The file is the API's own shape (snake_case; camelCase is accepted too, as the models
read both). Problems are reported as one usage error naming each bad field, never the
field's value: a deployment file usually carries secret values.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, TypeVar

import typer
import yaml
from pydantic import BaseModel, ValidationError

from deployplane.commands.connection import ExitCode, fail

__all__ = ["FileOption", "load_body"]

ModelT = TypeVar("ModelT", bound=BaseModel)

FileOption = Annotated[
    str,
    typer.Option(
        "--file", "-f", help="YAML or JSON body in the API's snake_case shape; '-' for stdin."
    ),
]


def _read(source: str) -> str:
    if source == "-":
        return sys.stdin.read()
    try:
        return Path(source).read_text(encoding="utf-8")
    except OSError as exc:
        fail(f"cannot read {source}: {exc.strerror or exc}", ExitCode.USAGE)


def load_body(source: str, model: type[ModelT]) -> ModelT:
    """Parse `source` (a path or '-') into `model`, or exit 2 with one clear line."""
    name = "stdin" if source == "-" else source
    try:
        data = yaml.safe_load(_read(source))  # YAML is a superset of JSON
    except yaml.YAMLError as exc:
        where = getattr(exc, "problem_mark", None)
        at = f" at line {where.line + 1}" if where is not None else ""
        fail(f"{name} is not valid YAML or JSON{at}", ExitCode.USAGE)
    if not isinstance(data, dict):
        fail(f"{name} must hold one object (a mapping of fields)", ExitCode.USAGE)
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or '<body>'}: {err['msg']}"
            for err in exc.errors()
        )
        fail(f"{name} is not a valid {model.__name__}: {problems}", ExitCode.USAGE)
