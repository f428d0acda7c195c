"""`deployplane demo` as the tests run it: in a child process with a state directory of
its own (`DEPLOYPLANE_DEMO_DIR`), from the repository's root; the environment of a shell
set up as its closing lines say; the processes still mentioning its state; and
docs/gitops.md's commands run on a GitOps demo (tests/support/doccommands.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.support.doccommands import gitops_doc_commands, why_not_on_the_gitops_demo

from deployplane.api.connection import ENV_API_KEY, ENV_URL
from deployplane.demo.steps import DEMO_API_KEY
from deployplane.devcluster import DevCluster

REPO = Path(__file__).resolve().parents[2]


def demo(*args: str, state: Path, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """`deployplane demo ARGS` with its state in `state`."""
    env = {**os.environ, "DEPLOYPLANE_DEMO_DIR": str(state)}
    return subprocess.run(
        [sys.executable, "-m", "deployplane.cli", "demo", *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def processes_using(state: Path) -> list[str]:
    out = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
    return [line for line in out.splitlines() if str(state) in line]


def demo_shell(state: Path) -> dict[str, str]:
    """The environment of a shell set up as `up`'s closing lines set it."""
    cluster = DevCluster.attach(state / "cluster")
    assert cluster is not None
    kubectl = cluster.tools.kubectl
    assert kubectl is not None
    bins = f"{kubectl.absolute().parent}:{Path(sys.executable).parent}"
    return {
        **os.environ,
        "KUBECONFIG": str(cluster.kubeconfig.absolute()),
        "PATH": f"{bins}:{os.environ['PATH']}",
        ENV_URL: (state / "emulator.url").read_text().strip(),
        ENV_API_KEY: DEMO_API_KEY,
    }


def run_gitops_doc_commands(state: Path, root: Path) -> int:
    """docs/gitops.md's commands, as written and in order, in one bash (they build on
    each other: a working copy, variables), from `root` laid out as the repository's
    root whose `.deployplane/demo` is the demo's state `state`; all but those its rules
    leave out (printed with the reason). The docs' own `kubectl wait`s check what they
    promise. Neither the demo's cluster nor our `kubectl` and `deployplane` are in the
    environment: the docs' lines put them there. How many ran."""
    root.mkdir()
    for name in ("examples", "charts", "tools", ".venv"):
        (root / name).symlink_to(REPO / name)
    (root / ".deployplane").mkdir()
    (root / ".deployplane" / "demo").symlink_to(state)
    lines = ["set -eo pipefail"]
    ran = 0
    for command in gitops_doc_commands(REPO):
        why = why_not_on_the_gitops_demo(command)
        if why is not None:
            print(f"not on the GitOps demo ({why}): {command}")
            continue
        lines += [f"echo {json.dumps(f'### {command.doc}:{command.line}')} >&2", command.text]
        ran += 1
    ours = {str(Path(sys.executable).parent), demo_shell(state)["PATH"].split(os.pathsep)[0]}
    env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
    env["PATH"] = os.pathsep.join(d for d in env["PATH"].split(os.pathsep) if d not in ours)
    # A user's git knows who commits; the test's is told.
    for who in ("AUTHOR", "COMMITTER"):
        env[f"GIT_{who}_NAME"], env[f"GIT_{who}_EMAIL"] = "docs", "docs@deployplane.invalid"
    done = subprocess.run(
        ["bash", "-c", "\n".join(lines)],
        capture_output=True,
        text=True,
        timeout=900,
        cwd=root,
        env=env,
    )
    assert done.returncode == 0, f"{done.stdout[-3000:]}\n{done.stderr[-4000:]}"
    return ran
