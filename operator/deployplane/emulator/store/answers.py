"""The emulator's Deployment answer: the published shape, with no secret value in it.

The published contract's `Deployment` holds `secrets` as `Secret` items, whose `value`
is required; the service never returns a value (values are write-only). So each secret
is answered with its name and a fixed mask, `SECRET_VALUE_MASK`, never anything derived
from the value (not even its length): the answer is valid against the contract and says
nothing about the value. The client reads names only (`api.models.SecretName`), so
nothing in deployplane can take the mask for a value (docs/emulator.md, "Secrets").
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Final

from deployplane.api import models
from deployplane.api.models import Secret

__all__ = ["SECRET_VALUE_MASK", "Deployment", "masked"]

SECRET_VALUE_MASK: Final = "<redacted>"


class Deployment(models.Deployment):
    """A deployment as the service returns it: its secrets in the published `Secret`
    shape, each value the mask (named `Deployment`: the OpenAPI document's schema name)."""

    secrets: Sequence[Secret] | None = None


def masked(names: Iterable[str]) -> list[Secret]:
    """The `secrets` of an answer: each name with the mask as its value."""
    return [Secret(name=name, value=SECRET_VALUE_MASK) for name in names]
