"""`jsonguard.body_errors`: the one check of every JSON request body (issue 14)."""

from __future__ import annotations

import pytest

from deployplane.emulator.web.jsonguard import MAX_DEPTH, MAX_ERRORS, body_errors


def locs(raw: bytes) -> list[list[object]]:
    errors = body_errors(raw)
    assert errors is not None
    return [error["loc"] for error in errors]


@pytest.mark.parametrize(
    "raw",
    [
        b'{"a": "plain", "b": [1, 2.5, -3, true, null], "c": {"d": "\\u00e9\\ud83d\\ude00"}}',
        b'{"big": 9223372036854775807, "small": -9223372036854775808, "tiny": 1e-400}',
        b'{"lit": "\\\\u0000 and \\\\udc80 are six characters each"}',
        '{"k": "caf\u00e9 \U0001f600"}'.encode(),
        '{"k": "utf-16"}'.encode("utf-16"),
    ],
)
def test_valid_bodies_pass(raw: bytes) -> None:
    assert body_errors(raw) == []


@pytest.mark.parametrize(
    ("raw", "loc"),
    [
        (b'{"a": {"b": "x\\udc80"}}', ["body", "a", "b"]),
        (b'{"a": ["ok", "\\ud800"]}', ["body", "a", 1]),
        (b'{"a": {"k\\udfff": 1}}', ["body", "a"]),
        (b'{"a": "\\u0000"}', ["body", "a"]),
        (b'{"a": {"\\u0000": 1}}', ["body", "a"]),
        (b'{"a": NaN}', ["body", "a"]),
        (b'{"a": [Infinity]}', ["body", "a", 0]),
        (b'{"a": -Infinity}', ["body", "a"]),
        (b'{"a": 1e400}', ["body", "a"]),
        (b'{"a": -1.5e309}', ["body", "a"]),
        (b'{"a": 9223372036854775808}', ["body", "a"]),
        (b'{"a": -9223372036854775809}', ["body", "a"]),
        (b'{"a": ' + b"1" * 5000 + b"}", ["body", "a"]),
        (b'{"a": "b\xed\xb2\x80"}', ["body"]),  # surrogate bytes are not UTF-8
        (b'{"a": "\xff"}', ["body"]),
    ],
)
def test_refused_values_are_named_by_their_place(raw: bytes, loc: list[object]) -> None:
    assert locs(raw) == [loc]


def test_errors_never_hold_the_value() -> None:
    errors = body_errors(b'{"secret": "sk-hidden\\udc80", "n": ' + b"7" * 100 + b"}")
    assert errors is not None
    assert len(errors) == 2
    assert "sk-hidden" not in repr(errors)
    assert "7777" not in repr(errors)


@pytest.mark.parametrize("depth", [MAX_DEPTH + 1, 256, 989, 100_000])
def test_nesting_beyond_the_limit(depth: int) -> None:
    raw = b"[" * depth + b"]" * depth
    errors = body_errors(raw)
    assert errors is not None
    assert len(errors) == 1
    assert "nested deeper than" in errors[0]["msg"]


def test_nesting_at_the_limit_passes() -> None:
    assert body_errors(b'{"a": ' * (MAX_DEPTH - 1) + b"{}" + b"}" * (MAX_DEPTH - 1)) == []


def test_not_json_is_left_to_the_framework() -> None:
    assert body_errors(b'{"a": ') is None
    assert body_errors(b"not json") is None


def test_errors_are_bounded() -> None:
    raw = b"[" + b",".join([b"NaN"] * 1000) + b"]"
    errors = body_errors(raw)
    assert errors is not None
    assert len(errors) == MAX_ERRORS
