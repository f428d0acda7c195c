"""The skips each tier of `make test` allows: what that tier cannot run by design.

A tier's pytest run names its lists with `--skips-allowed=NAME[,NAME...]`
(tests/support/skipcheck.py judges the run): a test that skips for a reason no list
names fails the run, however green the rest. Each entry is a regular expression matched
at the start of a skip's reason, and why this tier may skip it. The reasons are those
the tests give (tests/support/realnode.py, gitops.py, existing_cluster.py,
tests/e2e/conftest.py, agentbase.py): an entry that no longer matches its reason lets
nothing through, so the run fails loudly rather than passing quietly.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Final

__all__ = ["SKIPS_ALLOWED", "AllowedSkip", "UnknownList", "allowed_skips"]


@dataclass(frozen=True)
class AllowedSkip:
    """A skip a tier may report: `reason` matched at the start of the skip's reason."""

    reason: str
    why: str

    def matches(self, reason: str) -> bool:
        return re.match(self.reason, reason) is not None


_OTHER_TIER_REAL_NODE = AllowedSkip(
    r"the real-node tier runs with DEPLOYPLANE_E2E_REAL_NODE=1",
    "the real-node tier's tests run in that tier (make e2e-real-node)",
)
_OTHER_TIER_GITOPS = AllowedSkip(
    r"the GitOps tier runs with DEPLOYPLANE_E2E_GITOPS=1",
    "the GitOps tier's tests run in that tier (make e2e-gitops)",
)
_HELM_INSTALL_ONLY = AllowedSkip(
    r"only with DEPLOYPLANE_E2E_KUBECONFIG and DEPLOYPLANE_E2E_INSTALL=helm",
    "the chart installed on a cluster the run was handed (make e2e INSTALL=helm): "
    "make test installs the chart on the real node instead (test_realnode_helm.py)",
)

SKIPS_ALLOWED: Final[Mapping[str, tuple[AllowedSkip, ...]]] = {
    "unit": (
        AllowedSkip(
            r"no \S+/shared/spec/published-contract\.json beside this checkout",
            "the shared spec lies beside the repository only where it is shared (CI, the "
            "main checkout); elsewhere the copy in tests/support is all there is",
        ),
    ),
    "e2e": (_OTHER_TIER_REAL_NODE, _OTHER_TIER_GITOPS, _HELM_INSTALL_ONLY),
    "gitops": (),
    "existing": (
        AllowedSkip(
            r"existing cluster \(DEPLOYPLANE_E2E_KUBECONFIG\)",
            "what no cluster the run was handed allows: its audit log, the dev cluster's "
            "own tests, deleting a CRD",
        ),
        _HELM_INSTALL_ONLY,
        _OTHER_TIER_REAL_NODE,
    ),
    "real-node": (),
    # `make test REAL_NODE=0`: the run opted out of the real node (no root, or no wish
    # to), so what needs root or the real node's tools may skip in every tier.
    "without-real-node": (
        AllowedSkip(
            r"image builds need root and buildah",
            "REAL_NODE=0: building images needs root (buildah, chroot isolation)",
        ),
        AllowedSkip(
            r"needs root \(mmdebstrap, buildah",
            "REAL_NODE=0: building images needs root (mmdebstrap, buildah)",
        ),
        AllowedSkip(
            r"needs containerd and ctr in DEPLOYPLANE_TOOLS_BIN",
            "REAL_NODE=0: the real node's tools (make node-tools) are not built",
        ),
    ),
}


class UnknownList(ValueError):
    """A name that is not a list of SKIPS_ALLOWED."""


def allowed_skips(names: Iterable[str]) -> tuple[AllowedSkip, ...]:
    """The entries of the named lists, in order."""
    entries: list[AllowedSkip] = []
    for name in names:
        if name not in SKIPS_ALLOWED:
            known = ", ".join(SKIPS_ALLOWED)
            raise UnknownList(f"no list of allowed skips named {name!r} (known: {known})")
        entries += SKIPS_ALLOWED[name]
    return tuple(entries)
