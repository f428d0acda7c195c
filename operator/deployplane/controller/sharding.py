"""Label shards (Flux's convention): which resources this operator instance reconciles.

A resource labelled `sharding.fluxcd.io/key: NAME` belongs to the instance started with
`--shard NAME`; an unlabelled one to the default instance of a sharded install
(`--shard-default`); an instance started with neither reconciles everything (no
sharding: it must then be the only one). docs/sharding.md says why each choice.

How an instance sees only its own (both through Kopf's public surface):
- AgentDeployments and Listeners: a server-side label selector on the watch
  (`settings.watching.label_selectors`): `sharding.fluxcd.io/key=NAME`, or
  `!sharding.fluxcd.io/key` for the default. The apiserver sends neither the list nor
  the events of the other shards' resources, and when a resource's label moves it out
  of the selector, the watch says DELETED: the workers forget it (no finalization).
- ControlPlaneConnections: watched whole (every instance needs the connections index
  to resolve its resources' `connectionRef`), reconciled by the instance their label
  says: a Kopf label filter on the event handler (`labels=`), and a second handler with
  the complementary filter that lets go of one whose label moved away, and sees another
  instance's connection turn Ready (`deployplane.reconcile.usage`: each instance wakes
  its own resources; one being deleted is held by every shard's users, listed).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from deployplane.kube.paths import SHARD_LABEL

SHARD_ENV: Final = "DEPLOYPLANE_SHARD"
SHARD_DEFAULT_ENV: Final = "DEPLOYPLANE_SHARD_DEFAULT"


class ShardError(ValueError):
    """A shard name or combination of options the operator cannot use."""


def _valid_label_value(name: str) -> bool:
    """A Kubernetes label value: up to 63 alphanumerics, '-', '_', '.', alphanumeric at
    both ends."""
    if not 0 < len(name) <= 63 or not name.isascii():
        return False
    if not (name[0].isalnum() and name[-1].isalnum()):
        return False
    return all(c.isalnum() or c in "-_." for c in name)


@dataclass(frozen=True)
class Sharding:
    """This instance's part: `shard` (its label value), or `default` (the unlabelled
    resources), or neither (everything)."""

    shard: str | None = None
    default: bool = False

    def __post_init__(self) -> None:
        if self.shard is not None and self.default:
            raise ShardError("--shard and --shard-default exclude each other")
        if self.shard is not None and not _valid_label_value(self.shard):
            raise ShardError(
                f"shard name {self.shard!r} is not a label value (up to 63 letters, digits, "
                "'-', '_' or '.', starting and ending with a letter or digit)"
            )

    @property
    def enabled(self) -> bool:
        return self.shard is not None or self.default

    def describe(self) -> str:
        if self.shard is not None:
            return f"shard {self.shard!r}"
        return "the default shard (unlabelled resources)" if self.default else "every resource"

    def label_selector(self) -> str | None:
        """The watch's server-side label selector; None: no sharding, watch everything."""
        if self.shard is not None:
            return f"{SHARD_LABEL}={self.shard}"
        return f"!{SHARD_LABEL}" if self.default else None

    def owns(self, labels: Mapping[str, str] | None) -> bool:
        """Whether a resource with these labels is this instance's to reconcile."""
        value = (labels or {}).get(SHARD_LABEL)
        if self.shard is not None:
            return value == self.shard
        return value is None if self.default else True

    def owns_value(self, value: str | None, **_: Any) -> bool:
        """`owns`, as a Kopf label-filter callback (Kopf passes the label's value, None
        when absent)."""
        return self.owns({} if value is None else {SHARD_LABEL: value})

    def disowns_value(self, value: str | None, **_: Any) -> bool:
        """The complement of `owns_value`, for the handler that lets go."""
        return not self.owns_value(value)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Sharding:
        env = os.environ if env is None else env
        shard = env.get(SHARD_ENV) or None
        raw = (env.get(SHARD_DEFAULT_ENV) or "").strip().lower()
        if raw not in ("", "0", "1", "true", "false"):
            raise ShardError(f"{SHARD_DEFAULT_ENV} must be true or false, got {raw!r}")
        return cls(shard=shard, default=raw in ("1", "true"))

    def to_env(self) -> dict[str, str]:
        """The environment that `from_env` reads back (the CLI hands it to Kopf's run)."""
        env = {SHARD_DEFAULT_ENV: "true" if self.default else ""}
        env[SHARD_ENV] = self.shard or ""
        return env
