"""The previous release, as the upgrade test installs it: its own checkout (its chart,
CRDs and values) and its own image, built from that checkout.

The one place the previous release is pinned: `PREVIOUS_RELEASE`. Until a second release
exists it is an earlier commit of main, at least a week older than the release being cut,
so that the upgrade test compares real changes; when a release is cut, the next one's
previous release becomes its tag (docs/development.md, "Cutting a release").

The checkout is `git archive` of the commit from this repository's history into a
temporary directory (no worktree is registered, nothing is left in .git). A clone without
the commit (a shallow one) fails the test under CI=true and skips it elsewhere.

The image: the checkout's own tools/images/build.py builds its `deployplane:dev` (cached
by content in the images directory, like this checkout's), under the images lock; the
archive is imported into the real node under `IMAGE`, a name of its own
(`images.import_archive(name=...)`), and this checkout's archive is put back by its own
build.py (a cache hit: a rename). The previous checkout is never edited. The first build
belongs to the build, not to a test's timeout: `make e2e-real-node` runs
`python -m tests.support.previousrelease image` before the tier (a cache hit after).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from tests.support import imagelock

from deployplane.devcluster.realnode import images

ROOT = Path(__file__).resolve().parents[2]
# main of 2026-11-28 (the last landed state before 0.1.0 was cut): 0.1.0 has no released
# predecessor, and what a platform team would upgrade from is a main of a week before.
PREVIOUS_RELEASE = "af4abda15ff2f95b813136f6cd9efd9655f6ceff"
# The previous release's image on the node, beside this checkout's deployplane:dev.
IMAGE = f"docker.io/library/deployplane:previous-{PREVIOUS_RELEASE[:12]}"
APP_ARCHIVE = "deployplane-dev.tar"  # what build.py app writes (tools/images/recipes.py)


def missing(release: str = PREVIOUS_RELEASE) -> str | None:
    """Why `release` cannot be checked out here (None: it can)."""
    found = subprocess.run(
        ["git", "-C", str(ROOT), "cat-file", "-e", f"{release}^{{commit}}"],
        capture_output=True,
        check=False,
    )
    if found.returncode == 0:
        return None
    return (
        f"the previous release {release} is not in this clone's history "
        "(a shallow clone? git fetch --unshallow)"
    )


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() == "true"


def checkout(into: Path, release: str = PREVIOUS_RELEASE) -> Path:
    """The tree of `release` in `into` (created), by `git archive` of this repository;
    the calling test fails without the commit under CI=true, and is skipped elsewhere."""
    reason = missing(release)
    if reason is not None:
        if in_ci():
            pytest.fail(reason, pytrace=False)
        pytest.skip(reason)
    into.mkdir(parents=True, exist_ok=True)
    archive = subprocess.Popen(
        ["git", "-C", str(ROOT), "archive", "--format=tar", release], stdout=subprocess.PIPE
    )
    subprocess.run(["tar", "-x", "-C", str(into)], stdin=archive.stdout, check=True)
    assert archive.wait() == 0, f"git archive {release} failed"
    return into


def _build_app(tree: Path, lock: imagelock.ImagesLock) -> None:
    build = [sys.executable, str(tree / "tools" / "images" / "build.py"), "app"]
    subprocess.run(build, check=True, env=lock.env(), pass_fds=(lock.fd,))


def build_image() -> None:
    """The previous release's image built (or found cached), this checkout's put back."""
    with tempfile.TemporaryDirectory(prefix="deployplane-previous-") as tmp:
        tree = checkout(Path(tmp) / "tree")
        with imagelock.held() as lock:
            _build_app(tree, lock)
            _build_app(ROOT, lock)


def import_image(tree: Path, holder: int, ctr: Path) -> str:
    """The image of the checkout at `tree`, built (or found cached) by its own build.py
    and imported into the node as `IMAGE`; this checkout's archive put back after."""
    with imagelock.held() as lock:
        _build_app(tree, lock)
        archive = images.image_cache() / APP_ARCHIVE
        (name,) = images.import_archive(holder, ctr, archive, name=IMAGE)
        _build_app(ROOT, lock)
    return name


if __name__ == "__main__":
    if sys.argv[1:] != ["image"]:
        sys.exit("usage: python -m tests.support.previousrelease image")
    if (reason := missing()) is not None:
        print(f"== the previous release's image: not built: {reason}", file=sys.stderr)
        sys.exit(1 if in_ci() else 0)
    build_image()
