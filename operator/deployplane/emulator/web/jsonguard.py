"""The one check every JSON request body passes before it is routed, validated or stored.

Python's `json` module accepts what no column, response or peer can carry faithfully:
lone UTF-16 surrogates (`"\\udc80"`: stored, then every answer that holds it fails to
encode), `NaN`, `Infinity` and numbers that overflow to infinity (`1e400`: stored as
null), integers of thousands of digits, and nesting deep enough to exhaust the
serialiser's recursion limit. `body_errors` refuses all of them, and U+0000 (which
PostgreSQL text cannot hold), for every field of every body alike, in the shape of
HTTPValidationError: each error names the place (`loc`), never the value.

Pure functions over bytes, unit-tested without an app; `middleware.JsonGuardMiddleware`
applies them to every POST, PUT and PATCH.
"""

from __future__ import annotations

import json
import math
from typing import Any

from deployplane.emulator.errors import invalid
from deployplane.emulator.rules.validation import NUL_MESSAGE

__all__ = [
    "MAX_DEPTH",
    "MAX_ERRORS",
    "MAX_INT",
    "MIN_INT",
    "NUL_MESSAGE",
    "body_errors",
]

# Deepest nesting of objects and arrays, the body itself being level 1. The API's own
# shapes need 7 (body > source_config > resource_spec > sidecars > [i] > env > [i]);
# the rest is room for free-form objects (labels, valueFrom, compute_config), far
# below the ~250 levels at which serialisers give up.
MAX_DEPTH = 32
# Integers must fit a signed 64-bit integer, as SQLite's and PostgreSQL's (bigint) do.
MAX_INT = 2**63 - 1
MIN_INT = -(2**63)
# Errors reported per body: enough to fix a request, bounded for a hostile one.
MAX_ERRORS = 20

_SURROGATE_MESSAGE = "must be valid Unicode text (no lone UTF-16 surrogates)"
_NON_FINITE_MESSAGE = "must be a finite number (not NaN, Infinity or beyond 1.8e308)"
_INT_MESSAGE = "integer out of range (-2^63 .. 2^63-1)"
_DEPTH_MESSAGE = f"nested deeper than {MAX_DEPTH} levels of objects and arrays"
_ENCODING_MESSAGE = "the body must be UTF-8 encoded JSON text"


class _Refused:
    """Stands in for a number the parser must not produce; found again by the walk,
    which knows where it is."""

    __slots__ = ("message",)

    def __init__(self, message: str) -> None:
        self.message = message


_NON_FINITE = _Refused(_NON_FINITE_MESSAGE)
_OUT_OF_RANGE = _Refused(_INT_MESSAGE)


class _Parser:
    """json.loads hooks that stand a `_Refused` in for a refused number and remember
    that they did (so a clean document need not be walked)."""

    __slots__ = ("refused",)

    def __init__(self) -> None:
        self.refused = False

    def constant(self, _: str) -> _Refused:  # NaN, Infinity, -Infinity
        self.refused = True
        return _NON_FINITE

    def float_(self, text: str) -> float | _Refused:
        value = float(text)
        if math.isfinite(value):
            return value
        self.refused = True
        return _NON_FINITE

    def int_(self, text: str) -> int | _Refused:
        # longer than any in range: not even converted (int() is quadratic)
        if len(text) <= 20:
            value = int(text)
            if MIN_INT <= value <= MAX_INT:
                return value
        self.refused = True
        return _OUT_OF_RANGE


def _text_error(text: str) -> str | None:
    if "\x00" in text:
        return NUL_MESSAGE
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            return _SURROGATE_MESSAGE
    return None


Loc = tuple[str | int, ...]


def _walk(document: Any) -> list[dict[str, Any]]:
    """Every refused value of a parsed document, depth first, iteratively (a deep
    document must not exhaust this function's recursion either)."""
    errors: list[dict[str, Any]] = []
    stack: list[tuple[Any, Loc, int]] = [(document, ("body",), 1)]
    while stack and len(errors) < MAX_ERRORS:
        value, loc, depth = stack.pop()
        if isinstance(value, str):
            message = _text_error(value)
            if message is not None:
                errors.append(invalid(loc, message))
        elif isinstance(value, _Refused):
            errors.append(invalid(loc, value.message))
        elif isinstance(value, dict | list):
            if depth > MAX_DEPTH:
                errors.append(invalid(loc, _DEPTH_MESSAGE))
                continue
            children: list[tuple[Any, Loc, int]] = []
            if isinstance(value, dict):
                for key, item in value.items():
                    message = _text_error(key)
                    if message is not None:  # the key cannot be named: its object is
                        errors.append(invalid(loc, f"keys {message}"))
                        continue
                    children.append((item, (*loc, key), depth + 1))
            else:
                children = [(item, (*loc, i), depth + 1) for i, item in enumerate(value)]
            stack.extend(reversed(children))
    return errors[:MAX_ERRORS]


def body_errors(raw: bytes) -> list[dict[str, Any]] | None:
    """The errors of a JSON request body, [] when it may pass, None when it is not JSON
    at all (the framework answers that, as for any other malformed body)."""
    try:
        text = raw.decode(json.detect_encoding(raw))  # strict: no surrogate bytes either
    except UnicodeDecodeError:
        return [invalid(("body",), _ENCODING_MESSAGE)]
    parser = _Parser()
    try:
        document = json.loads(
            text, parse_constant=parser.constant, parse_float=parser.float_, parse_int=parser.int_
        )
    except RecursionError:  # deeper than the parser's own limit (~1000 levels)
        return [invalid(("body",), _DEPTH_MESSAGE)]
    except ValueError:
        return None
    # Strictly decoded text holds no surrogate and no NUL (JSON refuses raw control
    # characters in strings): only a \u escape can bring either. And with at most
    # MAX_DEPTH brackets in all, nothing is nested deeper. Most bodies end here.
    clean = not parser.refused and "\\u" not in text
    if clean and text.count("{") + text.count("[") <= MAX_DEPTH:
        return []
    return _walk(document)
