"""Publishing files to a repository of the dev cluster's git server, as a user would.

The bare repository is created under the server's root (served at once), and the files
are committed in a scratch working copy and pushed over HTTP with the git CLI: the
same path as `git push <git_url>/<name>.git`, so what Argo CD and Flux fetch is what a
push delivered.
"""

from __future__ import annotations

import subprocess
import tempfile
from collections.abc import Mapping
from pathlib import Path

from deployplane.devcluster.errors import DevClusterError
from deployplane.devcluster.gitops.launch import GitOpsInfo

BRANCH = "main"
_AUTHOR = ("-c", "user.name=deployplane", "-c", "user.email=dev@deployplane.invalid")


def _git(*args: str) -> str:
    done = subprocess.run(
        ["git", *_AUTHOR, *args], capture_output=True, text=True, timeout=60, check=False
    )
    if done.returncode != 0:
        raise DevClusterError(f"git {args[0]}: {done.stderr.strip()}")
    return done.stdout.strip()


def push(info: GitOpsInfo, name: str, files: Mapping[str, str], message: str) -> str:
    """Commit `files` (path in the repository -> text) on branch main of
    `<git_url>/<name>.git`, creating the repository if it is new; its URL."""
    bare = Path(info.git_root) / f"{name}.git"
    if not bare.exists():
        _git("init", "--quiet", "--bare", f"--initial-branch={BRANCH}", str(bare))
    url = f"{info.git_url}/{name}.git"
    with tempfile.TemporaryDirectory(prefix="deployplane-git-") as scratch:
        work = Path(scratch)
        _git("init", "--quiet", f"--initial-branch={BRANCH}", str(work))
        if _git("ls-remote", url, f"refs/heads/{BRANCH}"):
            _git("-C", str(work), "pull", "--quiet", url, BRANCH)
        for relative, text in files.items():
            path = work / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
        _git("-C", str(work), "add", "--all")
        _git("-C", str(work), "commit", "--quiet", "--allow-empty", "-m", message)
        _git("-C", str(work), "push", "--quiet", url, BRANCH)
    return url
