"""Secret values sealed for the data plane: only the server-side key opens them, and
only for the deployment they belong to."""

from __future__ import annotations

import uuid

import pytest

from deployplane.emulator.errors import ConflictError
from deployplane.emulator.store.secretvalues import seal, unseal

KEY = bytes(range(32))
DEPLOYMENT = uuid.UUID("11111111-2222-4333-8444-555555555555")
VALUES = {"OPENAI_API_KEY": "sk-very-secret", "TOKEN": "t"}


def test_sealed_values_open_with_the_key_and_hold_no_plain_text() -> None:
    stored = seal(KEY, DEPLOYMENT, VALUES)
    assert "sk-very-secret" not in str(stored)
    assert "OPENAI_API_KEY" not in str(stored)
    assert unseal(KEY, DEPLOYMENT, stored) == VALUES


def test_two_seals_of_the_same_values_differ() -> None:
    assert seal(KEY, DEPLOYMENT, VALUES) != seal(KEY, DEPLOYMENT, VALUES)


@pytest.mark.parametrize(
    ("key", "deployment"),
    [(bytes(32), DEPLOYMENT), (KEY, uuid.UUID(int=1))],
    ids=["another key", "another deployment's row"],
)
def test_a_row_that_does_not_open_is_a_clear_conflict(key: bytes, deployment: uuid.UUID) -> None:
    stored = seal(KEY, DEPLOYMENT, VALUES)
    with pytest.raises(ConflictError, match="cannot be read with this emulator's key") as caught:
        unseal(key, deployment, stored)
    assert "sk-very-secret" not in str(caught.value)


def test_a_plain_row_is_refused_not_read() -> None:
    with pytest.raises(ConflictError):
        unseal(KEY, DEPLOYMENT, dict(VALUES))
