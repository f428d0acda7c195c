"""Reading resource files for `create -f`, `update -f` and `apply -f`: checked locally,
named precisely.

The file is the API's own shape (snake_case; camelCase is accepted too, as the models
read both), so the output of `get -o yaml` is a valid file: its read-only fields (id,
status, timestamps...) are known and ignored. What is caught before any request, each
as one line and exit 2, never echoing a value (a deployment file carries secrets):

- malformed YAML or JSON: the line and column;
- a Kubernetes manifest (apiVersion + kind): it belongs to `kubectl apply`;
- an unknown field, as kubectl's strict field validation says it:
  `unknown field "source_revision_config.imag_uri" (did you mean "image_uri"?)`;
- a bad value: one message per field (`source_config.resource_spec.min_scale: must be
  a number`), not pydantic's one per branch of a union.
"""

from __future__ import annotations

import difflib
import json
import re
import sys
import types
from collections.abc import Iterable
from pathlib import Path
from typing import Annotated, Any, Union, get_args, get_origin

import yaml
from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from deployplane.cli.commands.connection import ExitCode, fail
from deployplane.naming import camelize

__all__ = [
    "check_fields",
    "field_errors",
    "read_documents",
]


class BadFile(Exception):
    """A file that is not valid input: its one-line reason."""


def _read(source: str) -> str:
    try:
        if source == "-":
            return sys.stdin.read()
        return Path(source).read_text(encoding="utf-8")
    except OSError as exc:
        fail(f"cannot read {source}: {exc.strerror or exc}", ExitCode.USAGE)
    except UnicodeDecodeError:
        name = "stdin" if source == "-" else source
        fail(f"cannot read {name}: not UTF-8 text", ExitCode.USAGE)


_QUOTED_KEY = re.compile(r'"\s*:')


def _parse(text: str) -> list[Any]:
    """The documents of `text`; `BadFile` with the line and column of a syntax error."""
    if text.lstrip().startswith(("{", "[")):
        try:  # JSON's own error is the precise one for a JSON file
            return [json.loads(text)]
        except json.JSONDecodeError as exc:
            json_error = f"is not valid JSON: line {exc.lineno}, column {exc.colno}: {exc.msg}"
            # YAML's flow style ({a: 1}) starts alike, but quoted keys say JSON: YAML
            # would read `{"a": }` as a null rather than refuse it.
            if _QUOTED_KEY.search(text):
                raise BadFile(json_error) from None
    try:
        return [doc for doc in yaml.safe_load_all(text) if doc is not None]
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or "syntax error"
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        raise BadFile(f"is not valid YAML: {where}{problem}") from None


def read_documents(source: str) -> list[dict[str, Any]]:
    """The objects in `source` (a path or '-'; YAML documents separated by `---` or a
    JSON object), or exit 2 with one line."""
    name = "stdin" if source == "-" else source
    try:
        documents = _parse(_read(source))
    except BadFile as exc:
        fail(f"{name} {exc}", ExitCode.USAGE)
    if not documents:
        fail(f"{name} is empty", ExitCode.USAGE)
    for document in documents:
        if not isinstance(document, dict):
            fail(f"{name} must hold objects (mappings of fields)", ExitCode.USAGE)
        if "apiVersion" in document and "kind" in document:
            fail(
                f"{name} is a Kubernetes manifest (kind {document['kind']}); "
                "use kubectl apply -f (deployplane files are the API's shape)",
                ExitCode.USAGE,
            )
    return documents


# ------------------------------------------------------------------ unknown fields


def _models_in(annotation: Any) -> list[type[BaseModel]]:
    """The models an annotation holds: `X | None`, `list[X]`, `Annotated[X, ...]`..."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    origin = get_origin(annotation)
    if origin is dict:
        return []  # free-form: anything goes inside
    if origin in (list, Union, types.UnionType, Annotated) or origin is not None:
        return [m for arg in get_args(annotation) for m in _models_in(arg)]
    return []


def _field_names(model: type[BaseModel]) -> dict[str, str]:
    """Every key a model reads -> its field name (snake and camel spellings)."""
    names: dict[str, str] = {}
    for field in model.model_fields:
        names[field] = field
        names.setdefault(camelize(field), field)
    return names


def _open(model: type[BaseModel]) -> bool:
    return model.model_config.get("extra") == "allow"


def check_fields(data: Any, models: Iterable[type[BaseModel]], path: str = "") -> list[str]:
    """The unknown fields of `data` against `models` (a key is known when any of them
    has it: a file may mix the write shape with the read-only fields of `get`)."""
    models = list(models)
    if isinstance(data, list):
        return [e for item in data for e in check_fields(item, models, path)]
    if not isinstance(data, dict) or not models or any(map(_open, models)):
        return []
    known = {key: field for model in models for key, field in _field_names(model).items()}
    problems: list[str] = []
    for key, value in data.items():
        where = f"{path}{key}"
        field = known.get(str(key))
        if field is None:
            close = difflib.get_close_matches(str(key), list(known), n=1)
            hint = f' (did you mean "{close[0]}"?)' if close else ""
            problems.append(f'unknown field "{where}"{hint}')
            continue
        inner = [
            m
            for model in models
            if field in model.model_fields
            for m in _models_in(model.model_fields[field].annotation)
        ]
        problems += check_fields(value, inner, f"{where}.")
    return problems


# ------------------------------------------------------------------ bad values

_TYPE_MESSAGES = {
    "missing": "required",
    "int_type": "must be an integer",
    "int_parsing": "must be an integer",
    "int_from_float": "must be an integer",
    "float_type": "must be a number",
    "float_parsing": "must be a number",
    "bool_type": "must be true or false",
    "bool_parsing": "must be true or false",
    "string_type": "must be a string",
    "uuid_type": "must be a UUID",
    "uuid_parsing": "must be a UUID",
    "dict_type": "must be a mapping",
    "model_type": "must be a mapping",
    "model_attributes_type": "must be a mapping",
    "list_type": "must be a list",
}


def _path(loc: tuple[int | str, ...], names: set[str]) -> str:
    # A union's branches appear in `loc` as type names ('int', 'float'...), which are
    # no field of ours: dropped, so the branches of one field share one path.
    kept = [str(p) for p in loc if isinstance(p, int) or p in names]
    return ".".join(kept) or "<file>"


def _all_names(models: Iterable[type[BaseModel]], seen: set[type[BaseModel]]) -> set[str]:
    names: set[str] = set()
    for model in models:
        if model in seen:
            continue
        seen.add(model)
        names |= set(_field_names(model))
        for field in model.model_fields.values():
            names |= _all_names(_models_in(field.annotation), seen)
    return names


def _message(errors: list[ErrorDetails]) -> str:
    kinds = {e["type"] for e in errors}
    if "finite_number" in kinds:  # int | float: "1e400" is neither
        return "must be a finite number"
    if kinds & {"float_type", "float_parsing"}:
        return "must be a number"  # int | float: a number covers both branches
    first = errors[0]
    if first["type"] in _TYPE_MESSAGES:
        return _TYPE_MESSAGES[first["type"]]
    msg = first["msg"]
    for said, say in (("Input should be", "must be"), ("String should", "must"), ("Value", "")):
        if msg.startswith(said):
            msg = (say + msg[len(said) :]).strip()
            break
    return msg


def field_errors(exc: ValidationError, model: type[BaseModel]) -> list[str]:
    """One `path: message` per field of a pydantic error (never the value)."""
    names = _all_names([model], set())
    by_path: dict[str, list[ErrorDetails]] = {}
    for error in exc.errors(include_input=False):
        by_path.setdefault(_path(error["loc"], names), []).append(error)
    return [f"{path}: {_message(errors)}" for path, errors in by_path.items()]
